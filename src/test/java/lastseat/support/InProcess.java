package lastseat.support;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import lastseat.checks.Checks;
import lastseat.config.LastseatConfig;
import lastseat.db.Database;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.Inventory;
import lastseat.inventory.NewEvent;
import lastseat.outbox.OutboxWorker;
import lastseat.payment.PaymentGateway;
import lastseat.work.Latency;
import lastseat.purchase.PurchaseFlow;
import lastseat.purchase.PurchaseWorkers;
import lastseat.purchase.Purchases;

import java.math.BigDecimal;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fast tier's lastseat: the service's own flow, state owner, gateway, checks and background jobs,
 * wired as {@code Services} wires them, but against {@link FakeOutside}, a private H2 database in
 * memory (or a file: {@link #onFile}) and a {@link TestClock} — no server, no WireMock. A test builds one per test (a
 * few milliseconds) and closes it.
 *
 * <p>Hazard: nothing here runs on its own. The sweeper, the reconciler and the outbox run when the
 * test calls them, after moving the clock; what the real-parts tier proves about their timing is
 * not proved here.
 */
public final class InProcess implements AutoCloseable {
    public final LastseatConfig config;
    public final TestClock clock = new TestClock();
    public final FakeOutside outside;
    public final Database database;
    public final Db db;
    public final Inventory inventory;
    public final Purchases purchases;
    public final PaymentGateway payments;
    public final PurchaseFlow flow;
    public final IdempotencyKeys keys;
    public final PurchaseWorkers workers;
    public final OutboxWorker outbox;

    private InProcess(LastseatConfig config) {
        this.config = config;
        this.outside = new FakeOutside(config);
        this.database = Database.open(config.db());
        this.db = new Db(database);
        this.inventory = new Inventory(database, config.purchase(), clock);
        this.purchases = new Purchases(database, inventory, clock, config.purchase().holdTtl(), config.reconcile().settleTime());
        this.payments = new PaymentGateway(outside, config.payment(), Latency.of(config.admission().callTime()));
        this.flow = new PurchaseFlow(new Checks(outside, config.checks()), payments, purchases, config.purchase(), clock);
        this.keys = new IdempotencyKeys(database, clock, config.abandonedAge());
        this.workers = new PurchaseWorkers(purchases, payments, config.purchase(), config.abandonedAge(), config.reconcile(),
                                           keys, config.idempotency(), clock);
        this.outbox = new OutboxWorker(database, outside, config.outbox(), clock);
    }

    /** The production defaults of {@code application.yaml}, with {@code overrides} (keys such as {@code purchase.deadline}). */
    public static InProcess start(Map<String, String> overrides) {
        // Dropped when the pool closes its last connection.
        return on("jdbc:h2:mem:fast-" + UUID.randomUUID(), overrides);
    }

    /**
     * The same parts over the H2 file {@code file} (no {@code .mv.db}), opened as the service opens its
     * default database: for the real-parts tier's tests of the file itself.
     */
    public static InProcess onFile(java.nio.file.Path file, Map<String, String> overrides) {
        return on("jdbc:h2:file:" + file.toAbsolutePath(), overrides);
    }

    private static InProcess on(String url, Map<String, String> overrides) {
        Map<String, String> settings = new HashMap<>(overrides);
        settings.put("db.url", url);
        return new InProcess(LastseatConfig.from(Config.just(ConfigSources.create(settings),
                                                             ConfigSources.classpath("application.yaml"))));
    }

    public static InProcess start() {
        return start(Map.of());
    }

    /** An event with these seat labels, priced 10.00 EUR; returns its id. */
    public String newEvent(String... seats) {
        String id = "ev-" + UUID.randomUUID();
        inventory.create(new NewEvent(id, "A test event", List.of(seats), null, new BigDecimal("10.00"), "EUR")
                                 .valid(config.events().maxCapacity()));
        return id;
    }

    /** An event with seats "1".."capacity". */
    public String newEvent(int capacity) {
        return newEvent(IntStream.rangeClosed(1, capacity).mapToObj(Integer::toString).toArray(String[]::new));
    }

    /** The state of one purchase as the database has it. */
    public String state(String purchaseId) {
        return db.purchaseState(purchaseId);
    }

    /**
     * I1–I3 against the fake provider's ledger: seats agree with purchases and tickets; a confirmed
     * or refunded purchase was captured once, a released one never, an open one at most once; every
     * refund is of a capture and a refunded purchase's capture is refunded once.
     */
    public void invariantsHold(String eventId) {
        Invariants.seatsAreConsistent(db, eventId);
        for (String row : db.strings("SELECT id || ' ' || state FROM purchases WHERE event_id = ?", eventId)) {
            String id = row.split(" ")[0];
            String state = row.split(" ")[1];
            List<FakeOutside.Payment> captures = outside.captures().stream().filter(p -> id.equals(p.purchaseId())).toList();
            switch (state) {
                case "CONFIRMED", "REFUNDED" -> assertThat(captures).as("I3: %s purchase %s captured once", state, id).hasSize(1);
                case "RELEASED", "EXPIRED" -> assertThat(captures).as("I3: %s purchase %s never captured", state, id).isEmpty();
                default -> assertThat(captures).as("I3: open purchase %s captured at most once", id).hasSizeLessThanOrEqualTo(1);
            }
        }
        assertThat(outside.refunds()).as("a capture is refunded at most once").doesNotHaveDuplicates();
    }

    /** Every bulkhead permit and pool connection is back, and no seat of the event is held. */
    public void resourcesCameBack(String eventId) {
        assertThat(payments.availablePermits()).as("payment permits back").isEqualTo(config.payment().permits());
        assertThat(database.activeConnections()).as("pool connections in use").isZero();
        assertThat(db.count("SELECT COUNT(*) FROM seats WHERE event_id = ? AND state = 'HELD'", eventId)).as("held seats").isZero();
    }

    @Override
    public void close() {
        workers.close();
        outbox.close();
        database.close();
    }
}
