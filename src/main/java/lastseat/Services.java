package lastseat;

import io.helidon.config.Config;
import lastseat.access.AdminRoutes;
import lastseat.access.ApiKeys;
import lastseat.access.Role;
import lastseat.checks.Checks;
import lastseat.config.LastseatConfig;
import lastseat.db.Database;
import lastseat.drill.DrillRoutes;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.EventRoutes;
import lastseat.inventory.Inventory;
import lastseat.ops.OpsRoutes;
import lastseat.outbox.OutboxRoutes;
import lastseat.outbox.OutboxWorker;
import lastseat.outside.OutsideHttp;
import lastseat.payment.PaymentGateway;
import lastseat.purchase.PurchaseFlow;
import lastseat.purchase.PurchaseMetrics;
import lastseat.purchase.PurchaseRoutes;
import lastseat.purchase.PurchaseWorkers;
import lastseat.purchase.Purchases;
import lastseat.work.Latency;

import java.time.Clock;
import java.util.logging.Logger;

/**
 * Everything one lastseat process is made of, built from its configuration tree. The whole tree is
 * read and validated ({@link LastseatConfig#from}) before anything opens, so a bad value stops
 * start-up with nothing to close; nothing here reads a key or combines two.
 */
public record Services(LastseatConfig config, Database db, Inventory inventory, Purchases purchases, PaymentGateway payments,
                       PurchaseRoutes purchaseRoutes, EventRoutes eventRoutes, DrillRoutes drillRoutes,
                       PurchaseWorkers purchaseWorkers, OutboxWorker outbox, OutboxRoutes outboxRoutes,
                       ApiKeys apiKeys, AdminRoutes adminRoutes, OpsRoutes opsRoutes) implements AutoCloseable {
    /**
     * Beyond the server's grace period, how long the shutdown waits for purchases still running (a
     * handler the server cut keeps its thread until its flow ends).
     */
    public static final java.time.Duration DRAIN_WAIT = java.time.Duration.ofSeconds(2);
    private static final Logger LOG = Logger.getLogger(Services.class.getName());

    public static Services create(Config source) {
        LastseatConfig config = LastseatConfig.from(source);
        Clock clock = Clock.systemUTC();
        Database db = Database.open(config.db());
        OutsideHttp http = new OutsideHttp(config.outside());
        Inventory inventory = new Inventory(db, config.purchase(), clock);
        Purchases purchases = new Purchases(db, inventory, clock, config.purchase().holdTtl(), config.reconcile().settleTime());
        PaymentGateway payments = new PaymentGateway(http, config.payment(), Latency.of(config.admission().callTime()));
        PurchaseFlow flow = new PurchaseFlow(new Checks(http, config.checks()), payments, purchases, config.purchase(), clock);
        IdempotencyKeys keys = new IdempotencyKeys(db, clock, config.abandonedAge());
        PurchaseRoutes purchaseRoutes = new PurchaseRoutes(flow, purchases, inventory, keys, config.purchase(), config.admission(),
                                                           new PurchaseMetrics(), payments);
        OutboxWorker outbox = new OutboxWorker(db, http, config.outbox(), clock);
        PurchaseWorkers workers = new PurchaseWorkers(purchases, payments, config.purchase(), config.abandonedAge(),
                                                      config.reconcile(), keys, config.idempotency(), clock);
        ApiKeys apiKeys = new ApiKeys(db, clock);
        return new Services(config, db, inventory, purchases, payments, purchaseRoutes,
                            new EventRoutes(inventory, config.events()),
                            new DrillRoutes(config.drills(), db, clock, config.sweepGrace(), config.recoveredWithin()),
                            workers, outbox, new OutboxRoutes(db, outbox), apiKeys, new AdminRoutes(apiKeys),
                            new OpsRoutes(inventory, purchases, db, config.ops(), clock));
    }

    /**
     * Installs the keys the configuration gives: the operator's, and the demo's when bin/run asks for
     * them. Without the demo, the demo's published keys are revoked wherever they are (a database that
     * bin/run once used must not keep a key printed in the README).
     *
     * <p>With the demo, the two keys are logged in one line ({@link #DEMO_KEYS_LOGGED}): they are public
     * values, and bin/run shows the ones this server installed instead of reading application.yaml again.
     */
    public void installKeys() {
        config.access().operatorKey().ifPresent(key -> apiKeys.install("operator", Role.OPERATOR, key));
        if (config.demo().createKeys()) {
            apiKeys.install("operator", Role.OPERATOR, config.demo().operatorKey());
            apiKeys.install(DEMO_CLIENT, Role.CLIENT, config.demo().clientKey());
            LOG.info(DEMO_KEYS_LOGGED + " demo.operator-key=" + config.demo().operatorKey()
                     + " demo.client-key=" + config.demo().clientKey());
        } else {
            int revoked = apiKeys.revokeValue(config.demo().operatorKey()) + apiKeys.revokeValue(config.demo().clientKey());
            if (revoked > 0) {
                LOG.warning("revoked " + revoked + " key(s) holding the demo's published values: demo.create-keys is off");
            }
        }
    }

    /**
     * How the line that states the demo's keys begins; bin/lib.sh's {@code demo_keys} finds it in the
     * server's log, so the two must change together.
     */
    public static final String DEMO_KEYS_LOGGED = "demo keys installed (public values, for trying lastseat only):";

    /** The name of the demo's client key. */
    public static final String DEMO_CLIENT = "demo-shop";

    /** Starts the background jobs; call once the server takes requests. */
    public void startWorkers() {
        purchaseWorkers.start();
        outbox.start();
    }

    /** Stops the background jobs, then the pool. */
    @Override
    public void close() {
        opsRoutes.close();
        purchaseWorkers.close();
        outbox.close();
        db.close();
    }
}
