package lastseat.purchase;

import lastseat.checks.Checks;
import lastseat.checks.Quote;
import lastseat.config.PurchaseConfig;
import lastseat.inventory.Hold;
import lastseat.inventory.Order;
import lastseat.payment.Charge;
import lastseat.payment.PaymentDeclined;
import lastseat.payment.PaymentGateway;
import lastseat.payment.PaymentOrder;
import lastseat.payment.PaymentUnavailable;
import lastseat.web.Problem;
import lastseat.work.Deadline;
import lastseat.work.DeadlinePassed;
import lastseat.work.Timeline;

import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One purchase, the five steps of DESIGN.md: reserve, check, pay, confirm, and release on every
 * other path.
 *
 * <p>Contract: the answer comes within the deadline plus a small slack (I5); an exception that
 * leaves {@link #purchase} means nothing was reserved; every answer but {@link Outcome#pending}
 * leaves the purchase released or terminal (or, for a decline, on its way there by the state
 * machine alone); the flow's own thread is never interrupted by a deadline, so it always records
 * the outcome.
 *
 * <p>Hazard — the money rule: from PAYING on, a payment request may have reached the provider, and
 * the reconciler settles any purchase it finds with its payment open by sending the same charge
 * again. So once PAYING may have been written, the buyer is told an error only when the purchase is
 * RELEASED (it then cannot be charged) or the provider declined this key; every other ending is 202,
 * pending, and the purchase's key tells its outcome later.
 */
public final class PurchaseFlow {
    private static final Logger LOG = Logger.getLogger(PurchaseFlow.class.getName());
    private final Checks checks;
    private final PaymentGateway payments;
    private final Purchases purchases;
    private final PurchaseConfig config;

    public PurchaseFlow(Checks checks, PaymentGateway payments, Purchases purchases, PurchaseConfig config) {
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
                    + "try again after Retry-After", Map.of(), config.retryAfter(), null);
        }
        Timeline timeline = new Timeline();
        Hold hold = reserve(order, timeline);                                                 // 1. reserve
        try {
            Quote quote = check(hold, deadline, timeline);                                    // 2. check
            Charge charge = payments.charge(paymentOrder(hold, quote), deadline, timeline);   // 3. pay
            return settle(hold, quote, charge, timeline);                                     // 4. confirm, 5. release
        } catch (Pending pending) {
            return pending.outcome();
        } catch (Problem answered) {
            throw answered;
        } catch (RuntimeException unexpected) {
            // A failure no step expected, after the seats were taken and perhaps a payment sent: the
            // purchase stays for recovery and the reconciler, and the buyer is told it is pending.
            LOG.log(Level.SEVERE, "purchase " + hold.purchaseId() + " failed unexpectedly; it stays for recovery", unexpected);
            return Outcome.pending(PurchaseView.of(hold, null, stateOr(hold, PurchaseState.HELD), List.of()));
        }
    }

    private Hold reserve(Order order, Timeline timeline) {
        int step = timeline.start("reserve");
        Hold hold = purchases.reserve(order);
        timeline.end(step, "held " + hold.seats().size() + (hold.seats().size() == 1 ? " seat" : " seats"));
        return hold;
    }

    /** The checks, then HELD → PAYING: after this the payment may be sent. */
    private Quote check(Hold hold, Deadline deadline, Timeline timeline) throws InterruptedException {
        Quote quote;
        try {
            quote = checks.run(hold, deadline, timeline);
        } catch (DeadlinePassed e) {
            timeline.endOpen("cancelled");
            throw releaseHeld(hold, "deadline passed during the checks", timeline,
                              new DeadlineExceeded(config.deadline(), "during the fraud and tax checks"));
        } catch (RuntimeException e) {
            throw releaseHeld(hold, e.getMessage(), timeline, e);
        }
        Purchases.Moved started;
        try {
            started = purchases.startPayment(hold, quote);
        } catch (RuntimeException e) {
            // Whether PAYING was written is not known: end it as a payment that never left, which it is.
            throw unsent(hold, quote, "could not start the payment: " + e.getMessage(), timeline, e);
        }
        if (started instanceof Purchases.Moved.Refused) {
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
            case Charge.Declined declined -> declined(hold, declined, timeline);
            case Charge.Rejected rejected -> throw unsent(hold, quote, "payment refused with " + rejected.status(), timeline,
                    new PaymentUnavailable(502, "payment-refused",
                            "The payment provider refused the request (" + rejected.status() + ")", null));
            case Charge.NotSent notSent -> throw unsent(hold, quote, "payment not attempted: " + notSent.reason(), timeline,
                    switch (notSent.why()) {
                        case DEADLINE -> new DeadlineExceeded(config.deadline(), "before the payment could start");
                        case CAPACITY -> new PaymentUnavailable(503, "payment-capacity-full",
                                "The payment could not be attempted: " + notSent.reason(), config.retryAfter());
                        case UNREACHABLE -> new PaymentUnavailable(503, "payment-unavailable",
                                "The payment could not be attempted: " + notSent.reason(), config.retryAfter());
                    });
        };
    }

    /**
     * HELD → RELEASED, then {@code outcome} for the caller to throw. No payment was started. If the
     * release fails, the hold stays until recovery releases it: the buyer is told it is pending
     * (202) rather than an error that says the seats came back, and its key stays taken until then.
     */
    private RuntimeException releaseHeld(Hold hold, String reason, Timeline timeline, RuntimeException outcome) {
        try {
            return switch (purchases.release(hold.purchaseId(), PurchaseState.HELD, reason, timeline, -1)) {
                case Purchases.Moved.Done done -> outcome;
                // Somebody else ended it first (the buyer cancelled, the hold expired): say that instead.
                case Purchases.Moved.Refused refused -> purchases.notPayable(hold);
                case Purchases.Moved.SeatsGone gone -> outcome;
            };
        } catch (RuntimeException e) {
            LOG.log(Level.SEVERE, "purchase " + hold.purchaseId() + " could not be released (" + reason
                                  + "); recovery releases it", e);
            return new Pending(PurchaseView.of(hold, null, PurchaseState.HELD, List.of()));
        }
    }

    /**
     * A purchase that may be PAYING though no payment request left (it was refused at once, never
     * connected, or never sent): RELEASED, then {@code outcome}. If it cannot be released, it stays
     * PAYING and the reconciler will settle it — possibly by charging — so the buyer is told 202,
     * never an error that says nothing was charged.
     */
    private RuntimeException unsent(Hold hold, Quote quote, String reason, Timeline timeline, RuntimeException outcome) {
        try {
            Purchases.Moved moved = purchases.release(hold.purchaseId(), PurchaseState.PAYING, reason, timeline, -1);
            if (moved instanceof Purchases.Moved.Refused refused && refused.actual().orElse(null) == PurchaseState.HELD) {
                // PAYING was never written.
                moved = purchases.release(hold.purchaseId(), PurchaseState.HELD, reason, timeline, -1);
            }
            return switch (moved) {
                case Purchases.Moved.Refused refused when refused.actual().map(PurchaseState::leavesNothing).orElse(false) ->
                        purchases.notPayable(hold);
                case Purchases.Moved.Refused refused ->
                        new Pending(PurchaseView.of(hold, quote, refused.actual().orElse(PurchaseState.PAYING), List.of()));
                case Purchases.Moved.Done done -> outcome;
                case Purchases.Moved.SeatsGone gone -> outcome;
            };
        } catch (RuntimeException e) {
            LOG.log(Level.SEVERE, "purchase " + hold.purchaseId() + " sent no payment but could not be released (" + reason
                                  + "); it stays for recovery and the reconciler, and its buyer is told it is pending", e);
            return new Pending(PurchaseView.of(hold, quote, PurchaseState.PAYING, List.of()));
        }
    }

    /** The provider declined this key: a definite refusal, true even while the release is still to come. */
    private Outcome declined(Hold hold, Charge.Declined declined, Timeline timeline) {
        try {
            purchases.release(hold.purchaseId(), PurchaseState.PAYING, "payment declined", timeline, -1);
        } catch (RuntimeException e) {
            // Left PAYING: recovery makes it PAYMENT_UNKNOWN, and the reconciler, told "failed" for the key, releases it.
            LOG.log(Level.SEVERE, "purchase " + hold.purchaseId() + " was declined but could not be released; "
                                  + "the reconciler will", e);
        }
        throw new PaymentDeclined(declined.reason());
    }

    /**
     * Once money has moved, no failure may escape as an error a client would retry with a new key
     * (a second purchase, a second charge): a confirmation that cannot be written leaves the
     * purchase pending, for the provider to be asked again.
     */
    private Outcome confirm(Hold hold, Quote quote, String paymentId, Timeline timeline) {
        int step = timeline.start("confirm");
        Purchases.Moved moved;
        try {
            moved = purchases.confirm(hold.purchaseId(), PurchaseState.PAYING, paymentId, timeline, step);
        } catch (RuntimeException e) {
            timeline.end(step, "failed: " + e.getMessage());
            LOG.log(Level.WARNING, "purchase " + hold.purchaseId() + " was charged (" + paymentId
                                   + ") but could not be confirmed; it stays pending", e);
            return pending(hold, quote, "charged as " + paymentId + " but not confirmed: " + e.getMessage(), timeline);
        }
        return switch (moved) {
            // Built from what was written, not read back: a failing read must not make it look pending.
            case Purchases.Moved.Done done -> new Outcome(PurchaseView.of(hold, quote, PurchaseState.CONFIRMED, done.tickets()), true);
            case Purchases.Moved.SeatsGone gone -> refund(hold, quote, paymentId, timeline, step);
            case Purchases.Moved.Refused refused -> {
                timeline.end(step, "refused: the purchase is " + refused.actual().map(Enum::name).orElse("gone"));
                yield Outcome.pending(PurchaseView.of(hold, quote, refused.actual().orElse(PurchaseState.PAYING), List.of()));
            }
        };
    }

    /**
     * The payment was captured but the seats are no longer all held: the money goes back (queued
     * durably with the state change) and the buyer is told, with a 409 that is stored for the key
     * like any answer. If even that cannot be written, the purchase is left pending for the
     * reconciler, which finds the capture and settles it.
     */
    private Outcome refund(Hold hold, Quote quote, String paymentId, Timeline timeline, int step) {
        try {
            purchases.refund(hold.purchaseId(), PurchaseState.PAYING, paymentId, "captured after its seats were gone", timeline, step);
        } catch (RuntimeException e) {
            timeline.end(step, "failed: " + e.getMessage());
            LOG.log(Level.WARNING, "purchase " + hold.purchaseId() + " was charged without its seats and could not be "
                                   + "refunded now; it stays pending", e);
            return pending(hold, quote, "charged as " + paymentId + " without its seats: " + e.getMessage(), timeline);
        }
        throw new Problem(409, "payment-refunded", "Seats gone, payment refunded",
                "The seats " + String.join(", ", hold.seats()) + " were no longer held when the payment was confirmed; the payment "
                + paymentId + " is being refunded", Map.of("purchaseId", hold.purchaseId(), "state", "REFUNDED"), null, null);
    }

    private Outcome pending(Hold hold, Quote quote, String reason, Timeline timeline) {
        try {
            purchases.loseAnswer(hold.purchaseId(), reason, timeline);
        } catch (RuntimeException e) {
            // Left PAYING: recovery makes it PAYMENT_UNKNOWN after purchase.abandoned-after.
            LOG.log(Level.WARNING, "purchase " + hold.purchaseId() + " could not be marked PAYMENT_UNKNOWN; "
                                   + "recovery will", e);
        }
        return Outcome.pending(PurchaseView.of(hold, quote, PurchaseState.PAYMENT_UNKNOWN, List.of()));
    }

    /** The purchase's state as the database has it, or {@code fallback} when it cannot be read. */
    private PurchaseState stateOr(Hold hold, PurchaseState fallback) {
        try {
            return purchases.stateOf(hold.purchaseId()).orElse(fallback);
        } catch (RuntimeException e) {
            return fallback;
        }
    }

    /**
     * A purchase that must be answered 202 from a step that otherwise ends by throwing its answer;
     * thrown only inside this class and caught by {@link #purchase}.
     */
    private static final class Pending extends RuntimeException {
        private final PurchaseView purchase;

        Pending(PurchaseView purchase) {
            super("pending", null, false, false);
            this.purchase = purchase;
        }

        Outcome outcome() {
            return Outcome.pending(purchase);
        }
    }
}
