package lastseat.purchase;

import lastseat.payment.PaymentGateway;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Settles PAYMENT_UNKNOWN purchases by asking the provider what it did with the purchase's key
 * ({@code GET /payments?idempotencyKey=}), never by guessing: captured → CONFIRMED (tickets, email),
 * or REFUNDED if the seats were gone; no payment → RELEASED; no clear answer → asked again after a
 * jittered, doubling backoff, for as long as it takes.
 *
 * <p>Contract: a purchase is asked about only after {@code settle-time} (a request still travelling
 * would otherwise be missed and its seats released under a payment that then arrives), and only by
 * the reconciler that leased it (a compare-and-set on its next check time), so two instances never
 * ask about one purchase at once; the answer moves it by the state machine's compare-and-set. A
 * purchase unknown for longer than {@code warn-after} is logged once by this process.
 */
final class Reconciler {
    private static final Logger LOG = Logger.getLogger(Reconciler.class.getName());
    private final Purchases purchases;
    private final PaymentGateway payments;
    private final ReconcileConfig config;
    private final Clock clock;
    private final Set<String> warned = ConcurrentHashMap.newKeySet();

    Reconciler(Purchases purchases, PaymentGateway payments, ReconcileConfig config, Clock clock) {
        this.purchases = purchases;
        this.payments = payments;
        this.config = config;
        this.clock = clock;
    }

    /** One pass over the purchases due; returns how many were settled. */
    int reconcile() throws InterruptedException {
        int settled = 0;
        for (Purchases.Unknown due : purchases.dueForCheck(config.batch())) {
            Instant now = clock.instant();
            // The lease outlasts the question, so nobody else asks while it is open.
            if (!purchases.lease(due, now.plus(config.callTimeout()).plus(config.callTimeout()))) {
                continue;
            }
            PaymentGateway.Lookup answer = payments.lookup(due.id(), config.callTimeout());
            switch (answer) {
                case PaymentGateway.Lookup.Captured captured -> {
                    PurchaseState state = purchases.confirmReconciled(due.id(), captured.paymentId());
                    LOG.info("purchase " + due.id() + " was captured as " + captured.paymentId() + ": " + state);
                    settled++;
                }
                case PaymentGateway.Lookup.None none -> {
                    purchases.releaseReconciled(due.id());
                    LOG.info("purchase " + due.id() + " has no payment at the provider: RELEASED");
                    settled++;
                }
                case PaymentGateway.Lookup.Unclear unclear -> postpone(due, unclear.reason(), now);
            }
        }
        return settled;
    }

    private void postpone(Purchases.Unknown due, String reason, Instant now) {
        int attempts = due.attempts() + 1;
        long base = config.backoff().toMillis() << Math.min(attempts - 1, 20);
        long capped = Math.min(base, config.maxBackoff().toMillis());
        Duration pause = Duration.ofMillis(capped / 2 + ThreadLocalRandom.current().nextLong(capped / 2 + 1));
        purchases.postpone(due.id(), now.plus(pause));
        Duration age = Duration.between(due.unknownSince(), now);
        if (age.compareTo(config.warnAfter()) > 0 && warned.add(due.id())) {
            LOG.log(Level.WARNING, "purchase " + due.id() + " has waited " + age.toMinutes() + " min for its payment to be known ("
                                   + attempts + " questions; last: " + reason + "); its seats stay held");
        }
    }
}
