package lastseat.inventory;

import java.util.List;

/**
 * A validated request to buy: either named {@code seats} (then {@code quantity} is their count) or
 * any {@code quantity} seats of the event.
 */
public record Order(String eventId, List<String> seats, int quantity, String buyerId, String buyerEmail,
                    String paymentToken, String idempotencyKey) {

    public boolean namesSeats() {
        return seats != null;
    }
}
