package lastseat;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A bad configuration value stops start-up with one sentence naming the key, before anything opens. */
class ConfigTest {

    @ParameterizedTest(name = "{0} = {1}")
    @CsvSource({
            "purchase.deadline, 0ms, purchase.deadline",
            "purchase.deadline, soon, purchase.deadline",
            "purchase.max-seats, 0, purchase.max-seats",
            "payment.permits, -1, payment.permits",
            "payment.max-wait, 5s, payment.max-wait",
            "db.pool-size, 1, db.pool-size",
            "db.lock-timeout, 0ms, db.lock-timeout",
            "payment.path, payments, payment.path",
            "outside.deadline-backstop, 1h, outside.deadline-backstop",
            "outside.base-url, ftp://x, outside.base-url",
            "purchase.hold-ttl, 0s, purchase.hold-ttl",
            "purchase.max-in-flight, 0, purchase.max-in-flight",
            "payment.max-attempts, 0, payment.max-attempts",
            "drills.max-buyers, 1, drills.max-buyers",
            "purchase.shed-after, 2s, purchase.shed-after",
    })
    void aBadValueStopsStartUpNamingTheKey(String key, String value, String named) {
        Config config = Config.just(ConfigSources.create(Map.of(key, value, "db.url", "jdbc:h2:mem:never-opened")),
                                    ConfigSources.classpath("application.yaml"));

        assertThatThrownBy(() -> Services.create(config))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(named);
    }
}
