package lastseat.config;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import lastseat.Services;
import lastseat.testkit.Instance;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The configuration tree: a bad value stops start-up with one sentence naming the key, before
 * anything opens; a rule between keys names both; application.yaml alone is a valid configuration,
 * the one home of every default, and every one of its keys is read, once; the values derived from
 * several keys follow it.
 */
@Tag("fast")
class ConfigTest {

    @ParameterizedTest(name = "{0} = {1}")
    @CsvSource({
            "purchase.deadline, 0ms",
            "purchase.deadline, soon",
            "purchase.answer-reserve, 401ms",
            "purchase.hold-ttl, 0s",
            "purchase.max-seats, 0",
            "purchase.max-seats, many",
            "purchase.max-body-bytes, 100",
            "purchase.reserve-rounds, 11",
            "purchase.retry-after, 0s",
            "purchase.sweep-interval, 1ms",
            "purchase.sweep-batch, 0",
            "purchase.abandoned-after, 2h",
            "purchase.pace-window, 0s",
            "purchase.pace-samples, 9",
            "purchase.max-in-flight, 0",
            "events.max-capacity, 0",
            "events.max-body-bytes, 100",
            "outside.base-url, ftp://x",
            "outside.base-url, not a url",
            "outside.connect-timeout, 1m",
            "outside.connect-timeout, 5s",
            "outside.call-timeout, 5ms",
            "outside.deadline-backstop, 1h",
            "outside.max-response-bytes, 100",
            "outside.idle-timeout, 5s",
            "outside.idle-timeout, 2d",
            "outside.max-idle-connections, 0",
            "outside.max-idle-connections, 5000",
            "checks.fraud-path, fraud",
            "checks.tax-path, /tax quotes",
            "payment.path, payments",
            "payment.permits, -1",
            "payment.max-wait, 2m",
            "payment.min-call-time, 11s",
            "payment.max-attempts, 0",
            "payment.retry-backoff, 6s",
            "reconcile.interval, 1ms",
            "reconcile.batch, 0",
            "reconcile.settle-time, 2h",
            "reconcile.call-timeout, 0ms",
            "reconcile.backoff, 0ms",
            "reconcile.max-backoff, 2d",
            "reconcile.give-up-after, 0s",
            "outbox.interval, 0ms",
            "outbox.batch, 0",
            "outbox.email-path, emails",
            "outbox.refund-path, refunds?x=1",
            "outbox.call-timeout, soon",
            "outbox.backoff, 2h",
            "outbox.max-backoff, 2d",
            "outbox.max-attempts, 0",
            "outbox.give-up-after, 1s",
            "db.pool-size, 1",
            "db.connection-timeout, 100ms",
            "db.lock-timeout, 0ms",
            "db.h2-housekeeping-interval, 50ms",
            "db.h2-housekeeping-interval, 2m",
            "db.h2-cache-megabytes, 0",
            "db.h2-cache-megabytes, 16385",
            "db.h2-cache-megabytes, 128MB",
            "drills.enabled, maybe",
            "demo.create-event, 1",
            "demo.create-keys, yes",
            "demo.operator-key, ls_1",
            "demo.client-key, not a key",
            "access.operator-key, hunter2",
            "access.admin-port, 70000",
            "warm-up.purchases, -1",
            "warm-up.purchases, 100001",
            "warm-up.max-time, 0s",
            "warm-up.postgres-schema, yes",
    })
    void aBadValueStopsStartUpNamingTheKey(String key, String value) {
        Config config = Config.just(ConfigSources.create(Map.of(key, value, "db.url", "jdbc:h2:mem:never-opened")),
                                    ConfigSources.classpath("application.yaml"));

        assertThatThrownBy(() -> Services.create(config))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Configuration " + key + " ");
    }

    /** Every rule of {@code LastseatConfig.checkAcross}, broken from the shipped configuration by the settings given. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "payment.max-wait=900ms | payment.max-wait | purchase.deadline",
            // Lowering the deadline alone is refused while the shipped payment wait (800 ms) is longer.
            "purchase.deadline=500ms | payment.max-wait | purchase.deadline",
            "reconcile.max-backoff=500ms | reconcile.max-backoff | reconcile.backoff",
            "reconcile.backoff=2m | reconcile.max-backoff | reconcile.backoff",
            "outbox.max-backoff=500ms | outbox.max-backoff | outbox.backoff",
            "outbox.backoff=10m | outbox.max-backoff | outbox.backoff",
            "demo.client-key=ls_0000000000000001_00000000000000000000000000000001 | demo.operator-key | demo.client-key",
            "access.operator-key=ls_1234567890abcdef_0123456789abcdef0123456789abcdef demo.create-keys=true"
            + " | access.operator-key | demo.create-keys",
    })
    void aRuleBetweenKeysStopsStartUpNamingBothKeys(String settings, String named, String other) {
        Map<String, String> overrides = new HashMap<>(Map.of("db.url", "jdbc:h2:mem:never-opened"));
        for (String setting : settings.trim().split(" ")) {
            overrides.put(setting.substring(0, setting.indexOf('=')), setting.substring(setting.indexOf('=') + 1));
        }
        Config config = Config.just(ConfigSources.create(overrides), ConfigSources.classpath("application.yaml"));

        assertThatThrownBy(() -> Services.create(config))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Configuration " + named + " ")
                .hasMessageContaining(" " + other + " ")
                .hasMessageContaining("must");
    }

    /**
     * A section checks its own keys only: made in code, it accepts what only a rule between keys
     * refuses, because every such rule is the tree's, in one place.
     */
    @Test
    void aSectionLeavesTheRulesBetweenKeysToTheTree() {
        String key = "ls_0000000000000001_00000000000000000000000000000001";

        DemoConfig sameKeys = new DemoConfig(false, true, key, key);
        PaymentConfig longWait = new PaymentConfig("/payments", 20, Duration.ofSeconds(50), Duration.ofMillis(50), 2,
                                                   Duration.ofMillis(20));

        assertThat(sameKeys.clientKey()).isEqualTo(sameKeys.operatorKey());
        assertThat(longWait.maxWait()).isGreaterThan(LastseatConfig.from(shipped()).purchase().deadline());
    }

    @Test
    void aRuleBetweenKeysAllowsTheTwoToBeEqual() {
        Config config = Config.just(ConfigSources.create(Map.of("payment.max-wait", "800ms",
                                                                "reconcile.max-backoff", "1s", "outbox.max-backoff", "1s")),
                                    ConfigSources.classpath("application.yaml"));

        LastseatConfig tree = LastseatConfig.from(config);

        assertThat(tree.payment().maxWait()).isEqualTo(tree.purchase().deadline());
        assertThat(tree.reconcile().maxBackoff()).isEqualTo(tree.reconcile().backoff());
    }

    @Test
    void applicationYamlAloneIsAValidConfigurationAndTheDerivedValuesFollowIt() {
        LastseatConfig tree = LastseatConfig.from(shipped());

        assertThat(tree.purchase().deadline()).isEqualTo(Duration.ofMillis(800));
        assertThat(tree.outbox()).isEqualTo(new OutboxConfig(Duration.ofMillis(500), 50, "/emails", "/refunds", Duration.ofSeconds(2),
                                                             Duration.ofSeconds(1), Duration.ofMinutes(5), 20, Duration.ofHours(24),
                                                             16, Duration.ofDays(7), 500));
        assertThat(tree.drills().enabled()).isFalse();
        assertThat(tree.demo().createEvent()).isFalse();
        assertThat(tree.warmUp()).isEqualTo(new WarmupConfig(1500, Duration.ofSeconds(10), true));
        // deadline 800 ms + abandoned-after 5 s; the sweeper's grace is two sweep intervals of 1 s.
        assertThat(tree.abandonedAge()).isEqualTo(Duration.ofMillis(5800));
        assertThat(tree.sweepGrace()).isEqualTo(Duration.ofSeconds(2));
        assertThat(tree.recoveredWithin()).isEqualTo(Duration.ofMillis(7800));
        assertThat(tree.drainPeriod()).isEqualTo(Duration.ofMillis(1300));
        // Admission: the work's 700 ms (deadline 800 ms less the answer's reserve 100 ms), margin min-call-time 50 ms,
        // 20 permits; both measures over the last 200 of 10 s at the 90th percentile, assuming a quarter of the
        // deadline and of max-wait (800 ms each) before.
        assertThat(tree.purchase().workTime()).isEqualTo(Duration.ofMillis(700));
        assertThat(tree.admission()).isEqualTo(new AdmissionConfig(
                Duration.ofMillis(700), Duration.ofMillis(50), 20,
                new AdmissionConfig.Measure(200, Duration.ofSeconds(10), 0.9, Duration.ofMillis(200)),
                new AdmissionConfig.Measure(200, Duration.ofSeconds(10), 0.9, Duration.ofMillis(200))));
    }

    @Test
    void theDerivedValuesFollowTheKeysTheyComeFrom() {
        LastseatConfig tree = LastseatConfig.from(Config.just(
                ConfigSources.create(Map.of("purchase.deadline", "2s", "payment.max-wait", "1200ms", "payment.min-call-time", "80ms",
                                            "payment.permits", "7", "purchase.pace-samples", "50", "purchase.pace-window", "30s",
                                            "purchase.abandoned-after", "3s", "purchase.sweep-interval", "250ms",
                                            "purchase.answer-reserve", "300ms")),
                ConfigSources.classpath("application.yaml")));

        assertThat(tree.admission()).isEqualTo(new AdmissionConfig(
                Duration.ofMillis(1700), Duration.ofMillis(80), 7,
                new AdmissionConfig.Measure(50, Duration.ofSeconds(30), 0.9, Duration.ofMillis(500)),
                new AdmissionConfig.Measure(50, Duration.ofSeconds(30), 0.9, Duration.ofMillis(300))));
        assertThat(tree.abandonedAge()).isEqualTo(Duration.ofSeconds(5));
        assertThat(tree.sweepGrace()).isEqualTo(Duration.ofMillis(500));
        assertThat(tree.recoveredWithin()).isEqualTo(Duration.ofMillis(5500));
        assertThat(tree.drainPeriod()).isEqualTo(Duration.ofMillis(2500));
    }

    /**
     * Reading the tree from application.yaml reads each of its keys exactly once: the reader refuses
     * a second read, so a completed read read none twice, and what it read is every documented key
     * (server.* is Helidon's, read by its WebServer builder) and nothing undocumented.
     */
    @Test
    void everyKeyOfApplicationYamlIsReadExactlyOnce() {
        Reader keys = new Reader(shipped());

        LastseatConfig.read(keys);

        Set<String> documented = leaves(shipped()).keySet().stream()
                .filter(key -> !key.startsWith("server."))
                .collect(Collectors.toSet());
        assertThat(keys.keysRead()).containsExactlyInAnyOrderElementsOf(documented);
    }

    @Test
    void aKeyReadTwiceIsRefusedAsTheBugItIs() {
        Reader keys = new Reader(shipped());
        keys.duration("purchase.retry-after");

        assertThatThrownBy(() -> keys.duration("purchase.retry-after"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("purchase.retry-after is read twice");
    }

    /**
     * Each key left out of application.yaml in turn stops start-up saying it is missing: the yaml is
     * the one home of every default, and no reader keeps a second one in code that could drift from it.
     */
    @Test
    void aKeyLeftOutOfApplicationYamlStopsStartUpAsMissing() {
        Map<String, String> all = leaves(shipped());
        Map<String, String> fallsBack = new TreeMap<>();
        for (String key : all.keySet()) {
            if (key.startsWith("server.")) {
                continue;
            }
            Map<String, String> without = new HashMap<>(all);
            without.remove(key);
            try {
                LastseatConfig.from(Config.just(ConfigSources.create(without)));
                fallsBack.put(key, all.get(key));
            } catch (IllegalStateException e) {
                assertThat(e).as(key).hasMessage("Configuration " + key + " is missing");
            }
        }
        assertThat(fallsBack).as("keys with a default in code as well as in application.yaml").isEmpty();
    }

    /** The testkit calls lastseat with the demo's keys as constants; they are application.yaml's. */
    @Test
    void theTestkitsDemoKeysAreTheOnesApplicationYamlInstalls() {
        DemoConfig demo = LastseatConfig.from(shipped()).demo();

        assertThat(Instance.DEMO_OPERATOR_KEY).isEqualTo(demo.operatorKey());
        assertThat(Instance.DEMO_CLIENT_KEY).isEqualTo(demo.clientKey());
    }

    @Test
    void aSectionMadeInCodeIsCheckedLikeOneReadFromConfiguration() {
        assertThatThrownBy(() -> new OutboxConfig(Duration.ZERO, 50, "/emails", "/refunds", Duration.ofSeconds(2),
                                                  Duration.ofSeconds(1), Duration.ofMinutes(5), 20, Duration.ofHours(24),
                                                  16, Duration.ofDays(7), 500))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Configuration outbox.interval ");
    }

    @Test
    void thePasswordIsNotPrinted() {
        DbConfig db = new DbConfig("jdbc:h2:mem:x", "sa", "hunter2", 4, Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(1), 16);

        assertThat(db.toString()).doesNotContain("hunter2").contains("jdbc:h2:mem:x");
    }

    private static Config shipped() {
        return Config.just(ConfigSources.classpath("application.yaml"));
    }

    /** Every key that has a value, with its text. */
    private static Map<String, String> leaves(Config config) {
        Map<String, String> leaves = new TreeMap<>();
        config.traverse().filter(Config::isLeaf).forEach(node -> leaves.put(node.key().toString(), node.asString().get()));
        return leaves;
    }
}
