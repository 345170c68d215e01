package lastseat.payment;

import lastseat.web.Problem;

/** 402: the provider declined the payment; the hold was released. */
public final class PaymentDeclined extends Problem {
    public PaymentDeclined(String reason) {
        super(402, "payment-declined", "Payment declined",
              "The payment provider declined the payment" + (reason == null || reason.isBlank() ? "" : ": " + reason)
              + "; the seats were released");
    }
}
