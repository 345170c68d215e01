package lastseat.payment;

import java.math.BigDecimal;

/** What to charge for one purchase. */
public record PaymentOrder(String purchaseId, BigDecimal total, String currency, String paymentToken) {
}
