package lastseat;

import io.helidon.config.Config;
import lastseat.checks.Checks;
import lastseat.checks.ChecksConfig;
import lastseat.db.Database;
import lastseat.db.DbConfig;
import lastseat.drill.DrillRoutes;
import lastseat.drill.DrillsConfig;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.EventRoutes;
import lastseat.inventory.Inventory;
import lastseat.inventory.InventoryConfig;
import lastseat.outbox.OutboxConfig;
import lastseat.outbox.OutboxRoutes;
import lastseat.outbox.OutboxWorker;
import lastseat.outside.OutsideConfig;
import lastseat.outside.OutsideHttp;
import lastseat.payment.PaymentConfig;
import lastseat.payment.PaymentGateway;
import lastseat.purchase.PurchaseConfig;
import lastseat.purchase.PurchaseFlow;
import lastseat.purchase.PurchaseMetrics;
import lastseat.purchase.PurchaseRoutes;
import lastseat.purchase.PurchaseWorkers;
import lastseat.purchase.Purchases;
import lastseat.purchase.ReconcileConfig;
import lastseat.purchase.SweepConfig;

import java.time.Clock;

/**
 * Everything one lastseat process is made of, built from configuration. Every configuration record
 * is read (and so validated) here, before the server accepts a request.
 */
public record Services(Database db, Inventory inventory, Purchases purchases, PaymentGateway payments,
                       PurchaseRoutes purchaseRoutes, EventRoutes eventRoutes, DrillRoutes drillRoutes,
                       PurchaseWorkers purchaseWorkers, OutboxWorker outbox, OutboxRoutes outboxRoutes) implements AutoCloseable {
    /**
     * Beyond the server's grace period, how long the shutdown waits for purchases still running (a
     * handler the server cut keeps its thread until its flow ends).
     */
    public static final java.time.Duration DRAIN_WAIT = java.time.Duration.ofSeconds(2);
    /** What a purchase needs past its deadline to write its outcome: the slack of I5, and some. */
    static final java.time.Duration ANSWER_SLACK = java.time.Duration.ofMillis(500);

    /**
     * How long a stopping server waits for the requests in flight: every purchase's deadline and
     * the slack to write its outcome. Set on the server, not configured: it follows the deadline.
     */
    public java.time.Duration drainPeriod() {
        return purchaseRoutes.deadline().plus(ANSWER_SLACK);
    }

    public static Services create(Config config) {
        Clock clock = Clock.systemUTC();
        PurchaseConfig purchaseConfig = PurchaseConfig.from(config);
        InventoryConfig inventoryConfig = InventoryConfig.from(config);
        ChecksConfig checksConfig = ChecksConfig.from(config);
        PaymentConfig paymentConfig = PaymentConfig.from(config);
        OutsideConfig outsideConfig = OutsideConfig.from(config.get("outside"));
        DrillsConfig drillsConfig = DrillsConfig.from(config);
        SweepConfig sweepConfig = SweepConfig.from(config);
        ReconcileConfig reconcileConfig = ReconcileConfig.from(config);
        OutboxConfig outboxConfig = OutboxConfig.from(config);
        int eventBodyBytes = lastseat.config.Values.integer(config.get("events"), "max-body-bytes", 1024, 16 * 1024 * 1024);
        if (purchaseConfig.shedAfter().compareTo(purchaseConfig.deadline()) > 0) {
            throw new IllegalStateException("Configuration purchase.shed-after (" + purchaseConfig.shedAfter()
                                            + ") must not be longer than purchase.deadline (" + purchaseConfig.deadline() + ")");
        }
        if (paymentConfig.maxWait().compareTo(purchaseConfig.deadline()) > 0) {
            throw new IllegalStateException("Configuration payment.max-wait (" + paymentConfig.maxWait()
                                            + ") must not be longer than purchase.deadline (" + purchaseConfig.deadline() + ")");
        }
        Database db = Database.open(DbConfig.from(config.get("db")));
        OutsideHttp http = new OutsideHttp(outsideConfig);
        Inventory inventory = new Inventory(db, inventoryConfig, clock);
        Purchases purchases = new Purchases(db, inventory, clock, reconcileConfig.settleTime());
        PaymentGateway payments = new PaymentGateway(http, paymentConfig);
        PurchaseFlow flow = new PurchaseFlow(new Checks(http, checksConfig), payments, purchases, purchaseConfig);
        PurchaseRoutes purchaseRoutes = new PurchaseRoutes(flow, purchases, inventory, new IdempotencyKeys(db, clock,
                purchaseConfig.deadline().plus(sweepConfig.abandonedAfter())),
                                                           purchaseConfig, new PurchaseMetrics());
        OutboxWorker outbox = new OutboxWorker(db, http, outboxConfig, clock);
        PurchaseWorkers workers = new PurchaseWorkers(purchases, payments, sweepConfig, reconcileConfig, purchaseConfig, clock);
        return new Services(db, inventory, purchases, payments, purchaseRoutes, new EventRoutes(inventory, eventBodyBytes),
                            new DrillRoutes(drillsConfig, db, inventory, purchases, clock, sweepConfig.interval().multipliedBy(2),
                                            purchaseConfig.deadline().plus(sweepConfig.abandonedAfter())
                                                    .plus(sweepConfig.interval().multipliedBy(2))),
                            workers, outbox, new OutboxRoutes(db, outbox));
    }

    /** Starts the background jobs; call once the server takes requests. */
    public void startWorkers() {
        purchaseWorkers.start();
        outbox.start();
    }

    /** Stops the background jobs, then the pool. */
    @Override
    public void close() {
        purchaseWorkers.close();
        outbox.close();
        db.close();
    }
}
