package lastseat.purchase;

import lastseat.checks.Checks;
import lastseat.checks.Quote;
import lastseat.inventory.Hold;
import lastseat.inventory.Inventory;
import lastseat.inventory.Order;
import lastseat.payment.Charge;
import lastseat.payment.PaymentDeclined;
import lastseat.payment.PaymentGateway;
import lastseat.payment.PaymentOrder;
import lastseat.payment.PaymentUnavailable;
import lastseat.work.Deadline;
import lastseat.work.DeadlinePassed;
import lastseat.web.Problem;
import lastseat.work.Timeline;

import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One purchase, the five steps of DESIGN.md: reserve, check, pay, confirm, and release on every
 * other path.
 *
 * <p>Contract: the answer comes within the deadline plus a small slack (I5); every outcome except
 * {@link Outcome#pending} leaves the purchase terminal; a purchase is released only when no payment
 * request can have reached the provider or the provider said no (I3); the flow's own thread is
 * never interrupted by a deadline, so it always records the outcome.
 */
public final class PurchaseFlow {
    private static final Logger LOG = Logger.getLogger(PurchaseFlow.class.getName());
    private final Inventory inventory;
    private final Checks checks;
    private final PaymentGateway payments;
    private final Purchases purchases;
    private final PurchaseConfig config;

    public PurchaseFlow(Inventory inventory, Checks checks, PaymentGateway payments, Purchases purchases,
                        PurchaseConfig config) {
        this.inventory = inventory;
        this.checks = checks;
        this.payments = payments;
        this.purchases = purchases;
        this.config = config;
    }

    /** How a purchase ended for its buyer: confirmed (201) or payment pending (202). */
    public record Outcome(PurchaseView purchase, boolean confirmed) {
        static Outcome pending(PurchaseView purchase) {
            return new Outcome(purchase, false);
        }
    }

    public Outcome purchase(Order order, Deadline deadline) throws InterruptedException {
        if (config.deadline().minus(deadline.remaining()).compareTo(config.shedAfter()) > 0) {
            // It waited too long to be served (for a connection, for the CPU) to finish in time: going
            // on would take seats and CPU from others and then miss anyway. Shed it, unreserved.
            throw new Problem(503, "overloaded", "Overloaded",
                    "The server is too busy to finish this purchase in time; nothing was reserved or charged, "
                    + "try again after Retry-After", java.util.Map.of(), config.retryAfter(), null);
        }
        Timeline timeline = new Timeline();
        Hold hold = reserve(order, timeline);                                                 // 1. reserve
        Quote quote = check(hold, deadline, timeline);                                        // 2. check
        Charge charge = payments.charge(paymentOrder(hold, quote), deadline, timeline);       // 3. pay
        return settle(hold, quote, charge, timeline);                                         // 4. confirm, 5. release
    }

    private Hold reserve(Order order, Timeline timeline) {
        int step = timeline.start("reserve");
        Hold hold = inventory.reserve(order);
        timeline.end(step, "held " + hold.seats().size() + (hold.seats().size() == 1 ? " seat" : " seats"));
        return hold;
    }

    private Quote check(Hold hold, Deadline deadline, Timeline timeline) throws InterruptedException {
        Quote quote;
        try {
            quote = checks.run(hold, deadline, timeline);
        } catch (DeadlinePassed e) {
            timeline.endOpen("cancelled");
            throw release(hold, PurchaseState.HELD, "deadline passed during the checks", timeline,
                          new DeadlineExceeded(config.deadline(), "during the fraud and tax checks"));
        } catch (RuntimeException e) {
            throw release(hold, PurchaseState.HELD, e.getMessage(), timeline, e);
        }
        try {
            purchases.markPaying(hold, quote);
        } catch (TransitionRefused e) {
            // Cancelled or expired while the checks ran: no payment starts, the seats are back already.
            throw purchases.notPayable(hold);
        }
        return quote;
    }

    private static PaymentOrder paymentOrder(Hold hold, Quote quote) {
        return new PaymentOrder(hold.purchaseId(), hold.amount().add(quote.tax()), hold.currency(), hold.paymentToken());
    }

    private Outcome settle(Hold hold, Quote quote, Charge charge, Timeline timeline) {
        return switch (charge) {
            case Charge.Captured captured -> confirm(hold, quote, captured.paymentId(), timeline);
            case Charge.Unknown unknown -> pending(hold, quote, unknown.reason(), timeline);
            case Charge.Declined declined -> throw release(hold, PurchaseState.PAYING, "payment declined", timeline,
                    new PaymentDeclined(declined.reason()));
            case Charge.Rejected rejected -> throw release(hold, PurchaseState.PAYING,
                    "payment refused with " + rejected.status(), timeline,
                    new PaymentUnavailable(502, "payment-refused",
                            "The payment provider refused the request (" + rejected.status() + ")", null));
            case Charge.NotSent notSent -> throw release(hold, PurchaseState.PAYING,
                    "payment not attempted: " + notSent.reason(), timeline, switch (notSent.why()) {
                        case DEADLINE -> new DeadlineExceeded(config.deadline(), "before the payment could start");
                        case CAPACITY -> new PaymentUnavailable(503, "payment-capacity-full",
                                "The payment could not be attempted: " + notSent.reason(), config.retryAfter());
                        case UNREACHABLE -> new PaymentUnavailable(503, "payment-unavailable",
                                "The payment could not be attempted: " + notSent.reason(), config.retryAfter());
                    });
        };
    }

    /**
     * Releases the hold and returns {@code outcome} for the caller to throw. When the release itself
     * fails, that failure is thrown instead (the buyer must not be told the seats came back), with the
     * outcome attached as suppressed; nothing was charged on any path that releases.
     */
    private RuntimeException release(Hold hold, PurchaseState from, String reason, Timeline timeline, RuntimeException outcome) {
        try {
            purchases.release(hold, from, reason, timeline);
            return outcome;
        } catch (TransitionRefused e) {
            // Somebody else ended it first (the buyer cancelled, the hold expired): say that instead.
            return from == PurchaseState.HELD ? purchases.notPayable(hold) : e;
        } catch (RuntimeException e) {
            e.addSuppressed(outcome);
            LOG.log(Level.SEVERE, "purchase " + hold.purchaseId() + " could not be released (" + reason
                                  + "); its hold stays until it expires", e);
            return e;
        }
    }

    /**
     * Once money may have moved, no failure may escape as an error a client would retry with a new
     * key (a second purchase, a second charge): a confirmation that cannot be written leaves the
     * purchase pending, for the provider to be asked again.
     */
    private Outcome confirm(Hold hold, Quote quote, String paymentId, Timeline timeline) {
        try {
            return new Outcome(purchases.confirm(hold, quote, paymentId, timeline), true);
        } catch (Purchases.HoldExpired e) {
            return refund(hold, quote, paymentId, timeline);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "purchase " + hold.purchaseId() + " was charged (" + paymentId
                                   + ") but could not be confirmed; it stays pending", e);
            return pending(hold, quote, "charged as " + paymentId + " but not confirmed: " + e.getMessage(), timeline);
        }
    }

    /**
     * The payment was captured after the hold had expired: the seats are no longer promised, so the
     * money goes back (queued durably with the state change) and the buyer is told, with a 409
     * that is stored for the key like any answer. If even that cannot be written, the purchase is
     * left pending for the reconciler, which finds the capture and settles it.
     */
    private Outcome refund(Hold hold, Quote quote, String paymentId, Timeline timeline) {
        try {
            purchases.refund(hold, PurchaseState.PAYING, paymentId, "the hold expired before the payment was confirmed", timeline);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "purchase " + hold.purchaseId() + " was charged after its hold expired and could not be "
                                   + "refunded now; it stays pending", e);
            return pending(hold, quote, "charged as " + paymentId + " after the hold expired: " + e.getMessage(), timeline);
        }
        throw new Problem(409, "hold-expired-refunded", "Hold expired, payment refunded",
                "The hold on " + String.join(", ", hold.seats()) + " expired before the payment was confirmed; the payment "
                + paymentId + " is being refunded", java.util.Map.of("purchaseId", hold.purchaseId(), "state", "REFUNDED"), null, null);
    }

    private Outcome pending(Hold hold, Quote quote, String reason, Timeline timeline) {
        try {
            return Outcome.pending(purchases.markUnknown(hold, quote, reason, timeline));
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "purchase " + hold.purchaseId() + " could not be marked PAYMENT_UNKNOWN; "
                                   + "it stays as it is", e);
            return Outcome.pending(PurchaseView.of(hold, quote, PurchaseState.PAYMENT_UNKNOWN, List.of()));
        }
    }

}
