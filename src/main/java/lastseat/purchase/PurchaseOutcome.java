package lastseat.purchase;

import lastseat.payment.Charge;

import java.util.List;

/**
 * How a purchase ended for its buyer, as a value: the flow returns one, the web edge
 * ({@link PurchaseAnswers}) turns it into a status, a body and a metric tag. Nothing here speaks HTTP.
 *
 * <p>The money rule in types: {@link Confirmed} and {@link Refunded} mean money moved; {@link Pending}
 * means it may have; a {@link Refused} purchase holds nothing and charged nothing.
 */
public sealed interface PurchaseOutcome {

    /** Captured once, tickets issued. */
    record Confirmed(PurchaseView purchase) implements PurchaseOutcome {
    }

    /** The payment may have been taken; the purchase's state (and its key) will tell. */
    record Pending(PurchaseView purchase) implements PurchaseOutcome {
    }

    /** Captured, but its seats were gone: the capture is being refunded. */
    record Refunded(String purchaseId, String paymentId, List<String> seats) implements PurchaseOutcome {
    }

    /** Nothing was charged and nothing is held, for this reason. */
    record Refused(Refusal why) implements PurchaseOutcome {
    }

    /** Why a purchase was refused. Each one leaves the purchase released, or never made. */
    sealed interface Refusal {
        /** It waited too long to be served to finish in time; nothing was reserved. */
        record Overloaded() implements Refusal {
        }

        /** Named seats are held or sold by somebody else. */
        record SeatsTaken(List<String> seats) implements Refusal {
        }

        /** Fewer seats are free than asked for. */
        record SoldOut(int asked, int available) implements Refusal {
        }

        /** The fraud check declined the buyer. */
        record FraudDeclined(String reason) implements Refusal {
        }

        /** A check service could not be used. */
        record CheckUnavailable(String service, String what) implements Refusal {
        }

        /** The deadline passed {@code during} a step, before any payment could leave. */
        record DeadlinePassed(String during) implements Refusal {
        }

        /** The hold expired before its payment could start. */
        record HoldExpired(List<String> seats) implements Refusal {
        }

        /** The buyer cancelled it before its payment. */
        record Cancelled(String purchaseId) implements Refusal {
        }

        /** Something else moved it first (it is now {@code state}); no payment was started by this request. */
        record StateChanged(String purchaseId, PurchaseState state) implements Refusal {
        }

        /** The provider declined this purchase's key. */
        record PaymentDeclined(String reason) implements Refusal {
        }

        /** The provider refused the request itself, before acting on it. */
        record PaymentRefused(int status) implements Refusal {
        }

        /** No payment request left: no permit in time, no time left, or no connection. */
        record PaymentNotAttempted(Charge.NotSent.Why why, String reason) implements Refusal {
        }
    }
}
