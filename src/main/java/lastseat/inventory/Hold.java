package lastseat.inventory;

import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;

/** Seats claimed for one purchase (state HELD) until {@code expiresAt}. */
public record Hold(String purchaseId, String eventId, List<String> seats, BigDecimal amount, String currency,
                   Instant expiresAt, String buyerId, String buyerEmail, String paymentToken) {
}
