package lastseat.config;

import io.helidon.config.Config;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * lastseat's whole configuration, one section per top-level key of {@code application.yaml}, which
 * documents every key and holds its one default (no reader has a fallback of its own).
 * {@link #from(Config)} is the one entry point: each section reads its own keys, each key once, and
 * checks their ranges and formats when it is made. Every rule between keys is in {@code checkAcross},
 * and every value derived from several keys is a method below ({@link #admission()},
 * {@link #abandonedAge()}, …), so no consumer combines keys itself. A configuration that exists is
 * valid: a bad value stops start-up, before anything opens, with one sentence naming the key (both
 * keys, for a rule between keys).
 *
 * <p>Not here: {@code server}, read by Helidon's own {@code WebServer} builder.
 *
 * <p>Hazard: the purchase's bounds hang together (the deadline caps the shedding point and the
 * payment wait; the age of an abandoned purchase is what the sweeper, the idempotency keys and the
 * invariant check must agree on). A consumer that reads a key itself, or adds two durations itself,
 * can drift from the others; take the value from here.
 */
public record LastseatConfig(PurchaseConfig purchase, EventsConfig events, OutsideConfig outside, ChecksConfig checks,
                             PaymentConfig payment, ReconcileConfig reconcile, OutboxConfig outbox, DbConfig db,
                             DrillsConfig drills, DemoConfig demo, AccessConfig access, IdempotencyConfig idempotency,
                             OpsConfig ops, WarmupConfig warmUp) {
    /** What a purchase needs past its deadline to write its outcome: the slack of I5, and some. */
    static final Duration ANSWER_SLACK = Duration.ofMillis(500);

    public LastseatConfig {
        Objects.requireNonNull(purchase, "purchase");
        Objects.requireNonNull(events, "events");
        Objects.requireNonNull(outside, "outside");
        Objects.requireNonNull(checks, "checks");
        Objects.requireNonNull(payment, "payment");
        Objects.requireNonNull(reconcile, "reconcile");
        Objects.requireNonNull(outbox, "outbox");
        Objects.requireNonNull(db, "db");
        Objects.requireNonNull(drills, "drills");
        Objects.requireNonNull(demo, "demo");
        Objects.requireNonNull(access, "access");
        Objects.requireNonNull(idempotency, "idempotency");
        Objects.requireNonNull(ops, "ops");
        Objects.requireNonNull(warmUp, "warmUp");
        checkAcross(purchase, payment, reconcile, outbox, demo, access);
    }

    /** Reads and checks every section; throws {@link IllegalStateException} naming the first bad key. */
    public static LastseatConfig from(Config config) {
        return read(new Reader(config));
    }

    /**
     * Every key lastseat reads, with its value in {@code config} (validated as {@link #from} does): the
     * whole of lastseat's own configuration and nothing else — no {@code server.*}, no environment.
     */
    public static Map<String, String> settings(Config config) {
        Reader keys = new Reader(config);
        read(keys);
        Map<String, String> settings = new LinkedHashMap<>();
        for (String key : keys.keysRead()) {
            settings.put(key, config.get(key).asString().get());
        }
        return settings;
    }

    static LastseatConfig read(Reader keys) {
        return new LastseatConfig(PurchaseConfig.read(keys), EventsConfig.read(keys), OutsideConfig.read(keys),
                                  ChecksConfig.read(keys), PaymentConfig.read(keys), ReconcileConfig.read(keys),
                                  OutboxConfig.read(keys), DbConfig.read(keys), DrillsConfig.read(keys), DemoConfig.read(keys),
                                  AccessConfig.read(keys), IdempotencyConfig.read(keys), OpsConfig.read(keys),
                                  WarmupConfig.read(keys));
    }

    /**
     * Every rule that involves more than one key, and nowhere else: each section has checked its own
     * keys by the time this runs. A broken rule names both keys.
     */
    private static void checkAcross(PurchaseConfig purchase, PaymentConfig payment, ReconcileConfig reconcile,
                                    OutboxConfig outbox, DemoConfig demo, AccessConfig access) {
        // A purchase shed later than its deadline is never shed: it has already been answered 504.
        // The remaining deadline cuts the wait anyway; a longer setting only promises what never happens.
        Check.notLonger("payment.max-wait", payment.maxWait(), "purchase.deadline", purchase.deadline());
        // A cap below the first pause would silently make every pause the cap: the backoff would not back off.
        Check.notShorter("reconcile.max-backoff", reconcile.maxBackoff(), "reconcile.backoff", reconcile.backoff());
        Check.notShorter("outbox.max-backoff", outbox.maxBackoff(), "outbox.backoff", outbox.backoff());
        // One value installed as both the operator and the shop "demo-shop" would let the shop operate.
        Check.differ("demo.operator-key", demo.operatorKey(), "demo.client-key", demo.clientKey());
        // Both install the key named "operator": the demo's published value would replace the real one.
        Check.notBoth("access.operator-key", access.operatorKey().isPresent(), "demo.create-keys", demo.createKeys(),
                      "both install the operator's key (the demo's keys are for bin/run only)");
    }

    /**
     * What admission plans with. The priors — what is assumed before ten durations of a kind are
     * measured — are a quarter of {@code purchase.deadline} for the way to the payment and a quarter of
     * {@code payment.max-wait} for a charge (with the shipped 800 ms each, 200 ms); what is measured
     * replaces them as it comes.
     */
    public AdmissionConfig admission() {
        return new AdmissionConfig(purchase.workTime(), payment.minCallTime(), payment.permits(),
                                   measure(purchase.deadline().dividedBy(4)), measure(payment.maxWait().dividedBy(4)));
    }

    private AdmissionConfig.Measure measure(Duration prior) {
        return new AdmissionConfig.Measure(purchase.paceSamples(), purchase.paceWindow(), AdmissionConfig.QUANTILE, prior);
    }

    /**
     * The age past which a purchase still HELD or PAYING was left by a process that stopped:
     * {@code purchase.deadline + purchase.abandoned-after}. The sweeper recovers it from then on, and
     * an Idempotency-Key claimed that long ago and never answered may be taken over by a retry.
     */
    public Duration abandonedAge() {
        return purchase.deadline().plus(purchase.abandonedAfter());
    }

    /** How long past its due moment a purchase may wait for the sweeper to reach it: two sweep intervals. */
    public Duration sweepGrace() {
        return purchase.sweepInterval().multipliedBy(2);
    }

    /** How long a purchase may stay HELD or PAYING before recovery must have moved it (I4): the abandoned age and the sweeper's grace. */
    public Duration recoveredWithin() {
        return abandonedAge().plus(sweepGrace());
    }

    /**
     * How long a stopping server waits for the requests in flight: every purchase's deadline and the
     * slack to write its outcome. Set on the server, not configured: it follows the deadline.
     */
    public Duration drainPeriod() {
        return purchase.deadline().plus(ANSWER_SLACK);
    }
}
