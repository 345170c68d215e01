package lastseat.purchase;

import lastseat.config.ReconcileConfig;
import lastseat.payment.Charge;
import lastseat.payment.PaymentGateway;
import lastseat.payment.PaymentOrder;
import lastseat.work.Backoff;
import lastseat.work.Timeline;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Settles purchases whose payment is open (PAYMENT_UNKNOWN, PAYMENT_UNRESOLVED) by the provider's
 * answer for the purchase's key, never by guessing. It asks what the provider did
 * ({@code GET /payments?idempotencyKey=}): captured → CONFIRMED (tickets, email; REFUNDED if the
 * seats were gone); failed/declined → RELEASED. When the provider has nothing for the key, that is
 * not believed — a request may still be travelling or be processed late — so the same charge is sent
 * again with the same key ({@link PaymentGateway#resend}): the provider answers with what it did or
 * decides now, and from then on the key is settled at the provider, so nothing can be captured after
 * lastseat has decided. Anything else is asked again after a jittered, doubling backoff.
 *
 * <p>Contract: a purchase is asked about only after {@code settle-time}, and only by the reconciler
 * that leased it (a compare-and-set on its next check time), so two instances never ask about one
 * purchase at once; every answer moves it through the state machine's table. A purchase still
 * unknown {@code give-up-after} after its payment went unknown becomes PAYMENT_UNRESOLVED: seats
 * still held, logged once (the move happens once, on whichever instance), listed and counted for an
 * operator, and still asked every {@code max-backoff} until the provider answers. The move comes
 * within {@code give-up-after} + the longer of {@code interval} and one question (at most two calls
 * of {@code call-timeout}: a lookup and a resend): a purchase's next question is never set past its
 * give-up time, and before each question a pass gives up every purchase due that is past it, so
 * neither a long backoff nor the questions about other purchases delay the move.
 *
 * <p>Hazard: sending the charge again charges the buyer when the first request never arrived; that
 * is what they asked for, their seats are still held for it, and their key's answer says so. The
 * bound holds for a running reconciler with fewer than {@code batch} purchases due at once: a
 * process killed mid-question leaves its lease ({@code 4 × call-timeout}) on the purchase, and a
 * stopped one asks nothing.
 */
final class Reconciler {
    private static final Logger LOG = Logger.getLogger(Reconciler.class.getName());
    private final Purchases purchases;
    private final PaymentGateway payments;
    private final ReconcileConfig config;
    private final Clock clock;

    Reconciler(Purchases purchases, PaymentGateway payments, ReconcileConfig config, Clock clock) {
        this.purchases = purchases;
        this.payments = payments;
        this.config = config;
        this.clock = clock;
    }

    /** What the provider told about one purchase's key. */
    private sealed interface Answer {
        record Captured(String paymentId) implements Answer {
        }

        record Refused(String why) implements Answer {
        }

        record Open(String why) implements Answer {
        }
    }

    /**
     * One pass: up to {@code batch} questions, each about the purchase due longest that this pass
     * has not asked yet. The purchases due are read again before each question, so that one whose
     * give-up time passed while another was being asked about is shown to an operator now, not
     * after the pass.
     */
    int reconcile() throws InterruptedException {
        int settled = 0;
        Set<String> asked = new HashSet<>();
        while (asked.size() < config.batch()) {
            if (Thread.currentThread().isInterrupted()) {
                throw new InterruptedException("reconciler stopped");
            }
            Instant now = clock.instant();
            List<Purchases.Open> dueNow = purchases.dueForCheck(config.batch());
            if (giveUpOverdue(dueNow, now)) {
                // Their state changed, and the lease compares it: read them as they are now.
                dueNow = purchases.dueForCheck(config.batch());
            }
            Purchases.Open due = dueNow.stream().filter(open -> !asked.contains(open.id())).findFirst().orElse(null);
            if (due == null) {
                break;
            }
            asked.add(due.id());
            // The lease outlasts a lookup, a permit wait and a resend, so nobody else asks while this question is open.
            if (!purchases.lease(due, now.plus(config.callTimeout().multipliedBy(4)))) {
                continue;
            }
            Timeline timeline = new Timeline(clock);
            int step = timeline.start("reconcile");
            switch (ask(due.id())) {
                case Answer.Captured captured -> {
                    settled++;
                    confirm(due, captured.paymentId(), timeline, step);
                }
                case Answer.Refused refused -> {
                    settled++;
                    Purchases.Moved moved = purchases.release(due.id(), due.state(), "the provider refused the payment: "
                                                                                     + refused.why(), timeline, step);
                    LOG.info("purchase " + due.id() + " was refused by the provider (" + refused.why() + "): " + moved);
                }
                case Answer.Open open -> postpone(due, open.why(), clock.instant());
            }
        }
        return settled;
    }

    /** Moves every PAYMENT_UNKNOWN purchase of {@code due} past its give-up time to PAYMENT_UNRESOLVED; true if one moved. */
    private boolean giveUpOverdue(List<Purchases.Open> due, Instant now) {
        boolean moved = false;
        String reason = "no answer settled it within " + config.giveUpAfter().toSeconds() + " s";
        for (Purchases.Open open : due) {
            Duration age = Duration.between(open.unknownSince(), now);
            if (open.state() == PurchaseState.PAYMENT_UNKNOWN && age.compareTo(config.giveUpAfter()) >= 0) {
                moved |= giveUp(open.id(), open.attempts(), age, reason);
            }
        }
        return moved;
    }

    /** PAYMENT_UNRESOLVED, logged once: only the instance whose compare-and-set moved it writes the warning. */
    private boolean giveUp(String id, int questions, Duration age, String reason) {
        if (!(purchases.giveUp(id, reason) instanceof Purchases.Moved.Done)) {
            return false;
        }
        LOG.log(Level.WARNING, "purchase " + id + " has waited " + age.toSeconds() + " s for its payment to be known ("
                               + questions + " questions; last: " + reason + "): PAYMENT_UNRESOLVED, its seats "
                               + "stay held; it is still asked every " + config.maxBackoff().toSeconds() + " s. "
                               + "See GET /purchases?state=PAYMENT_UNRESOLVED");
        return true;
    }

    /** The provider's answer for the key: a lookup, and when it has nothing, the same charge once more. */
    private Answer ask(String id) throws InterruptedException {
        return switch (payments.lookup(id, config.callTimeout())) {
            case PaymentGateway.Lookup.Captured captured -> new Answer.Captured(captured.paymentId());
            case PaymentGateway.Lookup.Refused refused -> new Answer.Refused("its payment is " + refused.status());
            case PaymentGateway.Lookup.Unclear unclear -> new Answer.Open(unclear.reason());
            case PaymentGateway.Lookup.None none -> {
                Purchases.Charged charged = purchases.charged(id);
                if (charged.paymentToken() == null) {
                    // It ended since it was leased (its token went with it): nothing to send, and its next move is refused.
                    yield new Answer.Open("the purchase ended while it was being asked about");
                }
                Charge charge = payments.resend(new PaymentOrder(id, charged.total(), charged.currency(), charged.paymentToken()),
                                                config.callTimeout());
                yield switch (charge) {
                    case Charge.Captured captured -> new Answer.Captured(captured.paymentId());
                    case Charge.Declined declined -> new Answer.Refused("it declined the charge sent again with the key"
                                                                        + (declined.reason() == null ? "" : " (" + declined.reason() + ")"));
                    default -> new Answer.Open("no payment for the key, and asking again gave no answer");
                };
            }
        };
    }

    private void confirm(Purchases.Open due, String paymentId, Timeline timeline, int step) {
        Purchases.Moved moved = purchases.confirm(due.id(), due.state(), paymentId, timeline, step);
        if (moved instanceof Purchases.Moved.SeatsGone) {
            moved = purchases.refund(due.id(), due.state(), paymentId, "captured after its seats were gone", timeline, step);
        }
        LOG.info("purchase " + due.id() + " was captured as " + paymentId + ": " + moved);
    }

    /**
     * After an answer that settled nothing ({@code now}: when it came). Past the give-up time the
     * purchase is shown to an operator; before it, the next question is not set past that time,
     * however long the backoff has grown, so the move is never a backoff late.
     */
    private void postpone(Purchases.Open due, String reason, Instant now) {
        Duration age = Duration.between(due.unknownSince(), now);
        boolean unknown = due.state() == PurchaseState.PAYMENT_UNKNOWN;
        if (unknown && age.compareTo(config.giveUpAfter()) >= 0) {
            // Refused only when its state moved meanwhile: either way it no longer waits as PAYMENT_UNKNOWN.
            giveUp(due.id(), due.attempts() + 1, age, reason);
            unknown = false;
        }
        Duration pause = Backoff.jittered(due.attempts() + 1, config.backoff(), config.maxBackoff(), ThreadLocalRandom.current());
        Instant next = now.plus(pause);
        Instant giveUpAt = due.unknownSince().plus(config.giveUpAfter());
        purchases.postpone(due.id(), unknown && next.isAfter(giveUpAt) ? giveUpAt : next);
    }
}
