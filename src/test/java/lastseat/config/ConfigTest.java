package lastseat.config;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import lastseat.Services;
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
 * anything opens; a rule between keys names both; application.yaml alone is a valid configuration
 * and every one of its keys is read, once.
 */
@Tag("fast")
class ConfigTest {

    @ParameterizedTest(name = "{0} = {1}")
    @CsvSource({
            "purchase.deadline, 0ms",
            "purchase.deadline, soon",
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
            "outside.call-timeout, 5ms",
            "outside.deadline-backstop, 1h",
            "outside.max-response-bytes, 100",
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
    })
    void aBadValueStopsStartUpNamingTheKey(String key, String value) {
        Config config = Config.just(ConfigSources.create(Map.of(key, value, "db.url", "jdbc:h2:mem:never-opened")),
                                    ConfigSources.classpath("application.yaml"));

        assertThatThrownBy(() -> Services.create(config))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Configuration " + key + " ");
    }

    @ParameterizedTest(name = "{0} = {1}")
    @CsvSource({
            "payment.max-wait, 900ms, payment.max-wait, purchase.deadline",
            // Lowering the deadline alone is refused while the shipped payment wait (800 ms) is longer.
            "purchase.deadline, 500ms, payment.max-wait, purchase.deadline",
            "reconcile.max-backoff, 500ms, reconcile.max-backoff, reconcile.backoff",
            "reconcile.backoff, 2m, reconcile.max-backoff, reconcile.backoff",
            "outbox.max-backoff, 500ms, outbox.max-backoff, outbox.backoff",
            "outbox.backoff, 10m, outbox.max-backoff, outbox.backoff",
    })
    void aRuleBetweenKeysStopsStartUpNamingBothKeys(String key, String value, String named, String other) {
        Config config = Config.just(ConfigSources.create(Map.of(key, value, "db.url", "jdbc:h2:mem:never-opened")),
                                    ConfigSources.classpath("application.yaml"));

        assertThatThrownBy(() -> Services.create(config))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Configuration " + named + " ")
                .hasMessageContaining(other);
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
                                                             Duration.ofSeconds(1), Duration.ofMinutes(5), 20, Duration.ofHours(24)));
        assertThat(tree.drills().enabled()).isFalse();
        assertThat(tree.demo().createEvent()).isFalse();
        // deadline 800 ms + abandoned-after 5 s; the sweeper's grace is two sweep intervals of 1 s.
        assertThat(tree.abandonedAge()).isEqualTo(Duration.ofMillis(5800));
        assertThat(tree.sweepGrace()).isEqualTo(Duration.ofSeconds(2));
        assertThat(tree.recoveredWithin()).isEqualTo(Duration.ofMillis(7800));
        assertThat(tree.drainPeriod()).isEqualTo(Duration.ofMillis(1300));
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
     * Each key left out of application.yaml in turn: either start-up stops saying it is missing, or
     * the fallback in code is the very default application.yaml documents.
     */
    @Test
    void aKeyLeftOutIsEitherMissingOrItsDocumentedDefault() {
        Map<String, String> all = leaves(shipped());
        LastseatConfig documented = LastseatConfig.from(shipped());
        Map<String, String> fallsBack = new TreeMap<>();
        for (String key : all.keySet()) {
            if (key.startsWith("server.")) {
                continue;
            }
            Map<String, String> without = new HashMap<>(all);
            without.remove(key);
            Config config = Config.just(ConfigSources.create(without));
            try {
                LastseatConfig tree = LastseatConfig.from(config);
                assertThat(tree).as("the tree without " + key).isEqualTo(documented);
                fallsBack.put(key, all.get(key));
            } catch (IllegalStateException e) {
                assertThat(e).as(key).hasMessage("Configuration " + key + " is missing");
            }
        }
        assertThat(fallsBack).containsOnlyKeys("outside.base-url", "checks.fraud-path", "checks.tax-path", "payment.path",
                                               "outbox.email-path", "outbox.refund-path", "db.user", "db.password",
                                               "drills.enabled", "demo.create-event", "demo.create-keys",
                                               "access.operator-key");
    }

    @Test
    void aSectionMadeInCodeIsCheckedLikeOneReadFromConfiguration() {
        assertThatThrownBy(() -> new OutboxConfig(Duration.ZERO, 50, "/emails", "/refunds", Duration.ofSeconds(2),
                                                  Duration.ofSeconds(1), Duration.ofMinutes(5), 20, Duration.ofHours(24)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Configuration outbox.interval ");
    }

    @Test
    void thePasswordIsNotPrinted() {
        DbConfig db = new DbConfig("jdbc:h2:mem:x", "sa", "hunter2", 4, Duration.ofSeconds(2), Duration.ofSeconds(2));

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
