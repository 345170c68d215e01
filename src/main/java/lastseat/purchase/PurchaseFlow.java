package lastseat.purchase;

import lastseat.checks.Checked;
import lastseat.checks.Checks;
import lastseat.checks.Quote;
import lastseat.config.PurchaseConfig;
import lastseat.inventory.Hold;
import lastseat.inventory.Order;
import lastseat.payment.Charge;
import lastseat.payment.PaymentGateway;
import lastseat.payment.PaymentOrder;
import lastseat.purchase.PurchaseOutcome.Refusal;
import lastseat.work.Deadline;
import lastseat.work.DeadlinePassed;
import lastseat.work.Timeline;

import java.time.Clock;
import java.util.List;
import java.util.Optional;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One purchase, the five steps of DESIGN.md: reserve, check, pay, confirm, and release on every
 * other path; how it ended comes back as a {@link PurchaseOutcome}, which speaks no HTTP.
 *
 * <p>Contract: the answer comes within the deadline plus a small slack (I5); a runtime exception that
 * leaves {@link #purchase} means nothing was reserved, but an {@link Error} or an
 * {@link InterruptedException} may leave after the reservation, even after the payment left — the
 * caller answers those as pending ({@code PurchaseRoutes} tracks how far its purchase got); every outcome but {@link PurchaseOutcome.Pending}
 * leaves the purchase released or terminal (or, after a decline, on its way there by the state
 * machine alone); the flow's own thread is never interrupted by a deadline, so it always records
 * the outcome.
 *
 * <p>Hazard — the money rule: from PAYING on, a payment request may have reached the provider, and
 * the reconciler settles any purchase it finds with its payment open by sending the same charge
 * again. So once PAYING may have been written, the buyer is refused only when the purchase is
 * RELEASED (it then cannot be charged) or the provider declined this key; every other ending is
 * pending, and the purchase's key tells its outcome later.
 */
public final class PurchaseFlow {
    private static final Logger LOG = Logger.getLogger(PurchaseFlow.class.getName());
    private final Checks checks;
    private final PaymentGateway payments;
    private final Purchases purchases;
    private final PurchaseConfig config;
    private final Clock clock;

    public PurchaseFlow(Checks checks, PaymentGateway payments, Purchases purchases, PurchaseConfig config, Clock clock) {
        this.checks = checks;
        this.payments = payments;
        this.purchases = purchases;
        this.config = config;
        this.clock = clock;
    }

    /**
     * What a purchase tells its admission as it goes: its reservation is made (or refused), and its
     * payment starts now.
     */
    interface Progress {
        Progress NONE = new Progress() {
            @Override
            public void reserved() {
            }

            @Override
            public void paying() {
            }
        };

        void reserved();

        void paying();
    }

    public PurchaseOutcome purchase(Order order, Deadline deadline) throws InterruptedException {
        return purchase(order, deadline, Progress.NONE);
    }

    PurchaseOutcome purchase(Order order, Deadline deadline, Progress progress) throws InterruptedException {
        Timeline timeline = new Timeline(clock);
        Purchases.Reservation reservation = reserve(order, deadline, timeline);                // 1. reserve
        progress.reserved();
        if (!(reservation instanceof Purchases.Reservation.Held(Hold hold))) {
            return refused(((Purchases.Reservation.Refused) reservation).why());
        }
        try {
            Checked checked = check(hold, deadline, timeline);                                 // 2. check
            if (!(checked instanceof Checked.Passed(Quote quote))) {
                return releaseHeld(hold, timeline, refusal(checked));
            }
            Optional<PurchaseOutcome> stopped = startPayment(hold, quote, timeline);
            if (stopped.isPresent()) {
                return stopped.get();
            }
            progress.paying();
            Charge charge = payments.charge(paymentOrder(hold, quote), deadline, timeline);    // 3. pay
            return settle(hold, quote, charge, timeline);                                      // 4. confirm, 5. release
        } catch (DeadlinePassed e) {
            timeline.endOpen("cancelled");
            return releaseHeld(hold, timeline, new Refusal.DeadlinePassed("during the fraud and tax checks"));
        } catch (RuntimeException unexpected) {
            // A failure no step expected, after the seats were taken and perhaps a payment sent: the
            // purchase stays for recovery and the reconciler, and the buyer is told it is pending.
            LOG.log(Level.SEVERE, "purchase " + hold.purchaseId() + " failed unexpectedly; it stays for recovery", unexpected);
            return pending(hold, null, stateOr(hold, PurchaseState.HELD));
        }
    }

    private Purchases.Reservation reserve(Order order, Deadline deadline, Timeline timeline) {
        int step = timeline.start("reserve");
        Purchases.Reservation reservation = purchases.reserve(order, deadline);
        timeline.end(step, switch (reservation) {
            case Purchases.Reservation.Held held -> "held " + held.hold().seats().size()
                                                    + (held.hold().seats().size() == 1 ? " seat" : " seats");
            case Purchases.Reservation.Refused refused -> "refused";
        });
        return reservation;
    }

    private Checked check(Hold hold, Deadline deadline, Timeline timeline) throws DeadlinePassed, InterruptedException {
        return checks.run(hold, deadline, timeline);
    }

    private static Refusal refusal(Checked checked) {
        return switch (checked) {
            case Checked.Declined declined -> new Refusal.FraudDeclined(declined.reason());
            case Checked.Unavailable unavailable -> new Refusal.CheckUnavailable(unavailable.service(), unavailable.what());
            case Checked.Passed passed -> throw new IllegalArgumentException("the checks passed");
        };
    }

    /**
     * HELD → PAYING: after this the payment may be sent. Empty when it may; otherwise how the
     * purchase ended instead (cancelled or expired during the checks, or a write that failed).
     */
    private Optional<PurchaseOutcome> startPayment(Hold hold, Quote quote, Timeline timeline) {
        // A step of its own: on a busy pool this write can wait longer than the checks took.
        int step = timeline.start("paying");
        Purchases.Moved started;
        try {
            started = purchases.startPayment(hold, quote);
        } catch (RuntimeException e) {
            timeline.end(step, "failed");
            // Whether PAYING was written is not known: end it as a payment that never left, which it is.
            LOG.log(Level.WARNING, "purchase " + hold.purchaseId() + " could not start its payment", e);
            return Optional.of(unsent(hold, quote, "could not start the payment", timeline,
                    new Refusal.PaymentNotAttempted(Charge.NotSent.Why.UNREACHABLE, "the payment could not be started")));
        }
        // Cancelled or expired while the checks ran: no payment starts, the seats are back already.
        boolean refused = started instanceof Purchases.Moved.Refused;
        timeline.end(step, refused ? "not payable" : "ok");
        return refused ? Optional.of(refused(purchases.notPayable(hold))) : Optional.empty();
    }

    private static PaymentOrder paymentOrder(Hold hold, Quote quote) {
        return new PaymentOrder(hold.purchaseId(), hold.amount().add(quote.tax()), hold.currency(), hold.paymentToken());
    }

    private PurchaseOutcome settle(Hold hold, Quote quote, Charge charge, Timeline timeline) {
        return switch (charge) {
            case Charge.Captured captured -> confirm(hold, quote, captured.paymentId(), timeline);
            case Charge.Unknown unknown -> unknown(hold, quote, unknown.reason(), timeline);
            case Charge.Declined declined -> declined(hold, declined, timeline);
            case Charge.Rejected rejected -> unsent(hold, quote, "payment refused with " + rejected.status(), timeline,
                                                    new Refusal.PaymentRefused(rejected.status()));
            case Charge.NotSent notSent -> unsent(hold, quote, "payment not attempted: " + notSent.reason(), timeline,
                                                  new Refusal.PaymentNotAttempted(notSent.why(), notSent.reason()));
        };
    }

    /**
     * HELD → RELEASED, then {@code why}. No payment was started. If the release fails, the hold stays
     * until recovery releases it: the buyer is told it is pending rather than that the seats came back,
     * and its key stays taken until then.
     */
    private PurchaseOutcome releaseHeld(Hold hold, Timeline timeline, Refusal why) {
        try {
            return switch (purchases.release(hold.purchaseId(), PurchaseState.HELD, describe(why), timeline, -1)) {
                case Purchases.Moved.Done done -> refused(why);
                // Somebody else ended it first (the buyer cancelled, the hold expired): say that instead.
                case Purchases.Moved.Refused refused -> refused(purchases.notPayable(hold));
                case Purchases.Moved.SeatsGone gone -> refused(why);
                // Not moved, so still held, as when the release fails.
                case Purchases.Moved.NotAllowed notAllowed -> pending(hold, null, PurchaseState.HELD);
            };
        } catch (RuntimeException e) {
            LOG.log(Level.SEVERE, "purchase " + hold.purchaseId() + " could not be released; recovery releases it", e);
            return pending(hold, null, PurchaseState.HELD);
        }
    }

    /**
     * A purchase that may be PAYING though no payment request left (refused at once, never
     * connected, never sent): RELEASED, then {@code why}. If it cannot be released it stays PAYING
     * and the reconciler will settle it — possibly by charging — so the buyer is told it is pending,
     * never that nothing was charged.
     */
    private PurchaseOutcome unsent(Hold hold, Quote quote, String reason, Timeline timeline, Refusal why) {
        try {
            Purchases.Moved moved = purchases.release(hold.purchaseId(), PurchaseState.PAYING, reason, timeline, -1);
            if (moved instanceof Purchases.Moved.Refused refused && refused.actual().orElse(null) == PurchaseState.HELD) {
                // PAYING was never written.
                moved = purchases.release(hold.purchaseId(), PurchaseState.HELD, reason, timeline, -1);
            }
            return switch (moved) {
                case Purchases.Moved.Refused refused when refused.actual().map(PurchaseState::leavesNothing).orElse(false) ->
                        refused(purchases.notPayable(hold));
                case Purchases.Moved.Refused refused -> pending(hold, quote, refused.actual().orElse(PurchaseState.PAYING));
                case Purchases.Moved.Done done -> refused(why);
                case Purchases.Moved.SeatsGone gone -> refused(why);
                // Not released, so possibly PAYING, as when the release fails: never "nothing was charged".
                case Purchases.Moved.NotAllowed notAllowed -> pending(hold, quote, PurchaseState.PAYING);
            };
        } catch (RuntimeException e) {
            LOG.log(Level.SEVERE, "purchase " + hold.purchaseId() + " sent no payment but could not be released (" + reason
                                  + "); it stays for recovery and the reconciler, and its buyer is told it is pending", e);
            return pending(hold, quote, PurchaseState.PAYING);
        }
    }

    /** The provider declined this key: a definite refusal, true even while the release is still to come. */
    private PurchaseOutcome declined(Hold hold, Charge.Declined declined, Timeline timeline) {
        try {
            purchases.release(hold.purchaseId(), PurchaseState.PAYING, "payment declined", timeline, -1);
        } catch (RuntimeException e) {
            // Left PAYING: recovery makes it PAYMENT_UNKNOWN, and the reconciler, told "failed" for the key, releases it.
            LOG.log(Level.SEVERE, "purchase " + hold.purchaseId() + " was declined but could not be released; "
                                  + "the reconciler will", e);
        }
        return refused(new Refusal.PaymentDeclined(declined.reason()));
    }

    /**
     * Once money has moved, no failure may become a refusal a client would retry with a new key (a
     * second purchase, a second charge): a confirmation that cannot be written leaves the purchase
     * pending, for the provider to be asked again.
     */
    private PurchaseOutcome confirm(Hold hold, Quote quote, String paymentId, Timeline timeline) {
        int step = timeline.start("confirm");
        Purchases.Moved moved;
        try {
            moved = purchases.confirm(hold.purchaseId(), PurchaseState.PAYING, paymentId, timeline, step);
        } catch (RuntimeException e) {
            timeline.end(step, "failed: the confirmation could not be written");
            LOG.log(Level.WARNING, "purchase " + hold.purchaseId() + " was charged (" + paymentId
                                   + ") but could not be confirmed; it stays pending", e);
            return unknown(hold, quote, "charged as " + paymentId + " but not confirmed", timeline);
        }
        return switch (moved) {
            // Built from what was written, not read back: a failing read must not make it look pending.
            case Purchases.Moved.Done done ->
                    new PurchaseOutcome.Confirmed(PurchaseView.of(hold, quote, PurchaseState.CONFIRMED, done.tickets()));
            case Purchases.Moved.SeatsGone gone -> refund(hold, quote, paymentId, timeline, step);
            case Purchases.Moved.Refused refused -> {
                timeline.end(step, "refused: the purchase is " + refused.actual().map(Enum::name).orElse("gone"));
                yield pending(hold, quote, refused.actual().orElse(PurchaseState.PAYING));
            }
            // Captured but not confirmed: pending, for the reconciler to find the capture.
            case Purchases.Moved.NotAllowed notAllowed -> {
                timeline.end(step, "refused: no move " + notAllowed.from() + " → " + notAllowed.to());
                yield pending(hold, quote, PurchaseState.PAYING);
            }
        };
    }

    /**
     * The payment was captured but the seats are no longer all held: the money goes back (queued
     * durably with the state change). If even that cannot be written, the purchase is left pending
     * for the reconciler, which finds the capture and settles it.
     */
    private PurchaseOutcome refund(Hold hold, Quote quote, String paymentId, Timeline timeline, int step) {
        Purchases.Moved moved;
        try {
            moved = purchases.refund(hold.purchaseId(), PurchaseState.PAYING, paymentId, "captured after its seats were gone", timeline, step);
        } catch (RuntimeException e) {
            timeline.end(step, "failed: the refund could not be written");
            LOG.log(Level.WARNING, "purchase " + hold.purchaseId() + " was charged without its seats and could not be "
                                   + "refunded now; it stays pending", e);
            return unknown(hold, quote, "charged as " + paymentId + " without its seats", timeline);
        }
        // Only a refund that was written may be told as one; anything else leaves the purchase where it
        // stands, pending, for the reconciler to settle from the provider's capture.
        return switch (moved) {
            case Purchases.Moved.Done done -> new PurchaseOutcome.Refunded(hold.purchaseId(), paymentId, hold.seats());
            case Purchases.Moved.Refused refused -> {
                timeline.end(step, "refused: the purchase is " + refused.actual().map(Enum::name).orElse("gone"));
                yield pending(hold, quote, refused.actual().orElse(PurchaseState.PAYING));
            }
            case Purchases.Moved.SeatsGone gone -> pending(hold, quote, PurchaseState.PAYING);
            case Purchases.Moved.NotAllowed notAllowed -> {
                timeline.end(step, "refused: no move " + notAllowed.from() + " → " + notAllowed.to());
                yield pending(hold, quote, PurchaseState.PAYING);
            }
        };
    }

    /** PAYING → PAYMENT_UNKNOWN, seats held, for the reconciler. */
    private PurchaseOutcome unknown(Hold hold, Quote quote, String reason, Timeline timeline) {
        try {
            purchases.loseAnswer(hold.purchaseId(), reason, timeline);
        } catch (RuntimeException e) {
            // Left PAYING: recovery makes it PAYMENT_UNKNOWN after purchase.abandoned-after.
            LOG.log(Level.WARNING, "purchase " + hold.purchaseId() + " could not be marked PAYMENT_UNKNOWN; recovery will", e);
        }
        return pending(hold, quote, PurchaseState.PAYMENT_UNKNOWN);
    }

    private static PurchaseOutcome pending(Hold hold, Quote quote, PurchaseState state) {
        return new PurchaseOutcome.Pending(PurchaseView.of(hold, quote, state, List.of()));
    }

    private static PurchaseOutcome refused(Refusal why) {
        return new PurchaseOutcome.Refused(why);
    }

    /** The purchase's state as the database has it, or {@code fallback} when it cannot be read. */
    private PurchaseState stateOr(Hold hold, PurchaseState fallback) {
        try {
            return purchases.stateOf(hold.purchaseId()).orElse(fallback);
        } catch (RuntimeException e) {
            return fallback;
        }
    }

    /** The reason a released purchase keeps in its row. */
    private static String describe(Refusal why) {
        return switch (why) {
            case Refusal.FraudDeclined declined -> "fraud check declined" + (declined.reason() == null ? "" : ": " + declined.reason());
            case Refusal.CheckUnavailable down -> "the " + down.service() + " service could not be used: " + down.what();
            case Refusal.DeadlinePassed late -> "deadline passed " + late.during();
            default -> "refused";
        };
    }
}
