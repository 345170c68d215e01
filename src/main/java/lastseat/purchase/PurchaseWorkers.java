package lastseat.purchase;

import lastseat.config.IdempotencyConfig;
import lastseat.config.PurchaseConfig;
import lastseat.config.ReconcileConfig;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.payment.PaymentGateway;
import lastseat.work.Worker;

import java.time.Clock;
import java.time.Duration;

/**
 * The purchase's background jobs of this instance: the {@link Sweeper} (expiry, recovery of what a
 * stopped process left; its first run at start-up), the {@link Reconciler} of unknown payments and the
 * {@link KeyKeeper} of Idempotency-Keys. Closing stops them, each after the pass in progress.
 */
public final class PurchaseWorkers implements AutoCloseable {
    private final Sweeper sweeper;
    private final Reconciler reconciler;
    private final Purchases purchases;
    private final Duration sweepInterval;
    private final Duration reconcileInterval;
    private final KeyKeeper keyKeeper;
    private final Duration keepInterval;
    private final int keepBatch;
    private Worker sweeping;
    private Worker reconciling;
    private Worker keeping;

    /** {@code abandonedAge}: {@code LastseatConfig.abandonedAge}, past which the sweeper recovers a purchase. */
    public PurchaseWorkers(Purchases purchases, PaymentGateway payments, PurchaseConfig purchase, Duration abandonedAge,
                           ReconcileConfig reconcile, IdempotencyKeys keys, IdempotencyConfig idempotency, Clock clock) {
        this.purchases = purchases;
        this.sweeper = new Sweeper(purchases, purchase.sweepBatch(), abandonedAge, clock);
        this.reconciler = new Reconciler(purchases, payments, reconcile, clock);
        this.sweepInterval = purchase.sweepInterval();
        this.reconcileInterval = reconcile.interval();
        this.keyKeeper = new KeyKeeper(keys, purchases, idempotency);
        this.keepInterval = idempotency.pruneInterval();
        this.keepBatch = idempotency.pruneBatch();
    }

    public synchronized void start() {
        if (sweeping == null) {
            sweeping = Worker.start("sweeper", sweepInterval, sweeper::sweep);
            reconciling = Worker.start("reconciler", reconcileInterval, reconciler::reconcile);
            // A pass that moved a whole batch is followed at once: at one batch a minute, keys made faster than
            // 8 a second would outgrow the pruning.
            keeping = Worker.start("key-keeper", keepInterval, keepBatch, keyKeeper::keep);
        }
    }

    /** Purchases whose payment is unknown, and how long the oldest has waited (for the metrics). */
    public int unknownPayments() {
        return purchases.count(PurchaseState.PAYMENT_UNKNOWN).count();
    }

    public double oldestUnknownSeconds() {
        return purchases.count(PurchaseState.PAYMENT_UNKNOWN).oldest().toMillis() / 1000.0;
    }

    /** Purchases an operator must see: their payment stayed unknown past reconcile.give-up-after. */
    public int unresolvedPayments() {
        return purchases.count(PurchaseState.PAYMENT_UNRESOLVED).count();
    }

    int sweepNow() {
        return sweeper.sweep();
    }

    int reconcileNow() throws InterruptedException {
        return reconciler.reconcile();
    }

    int keepKeysNow() {
        return keyKeeper.keep();
    }

    @Override
    public synchronized void close() {
        if (sweeping != null) {
            sweeping.close();
            reconciling.close();
            keeping.close();
        }
    }
}
