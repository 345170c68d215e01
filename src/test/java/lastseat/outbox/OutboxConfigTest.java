package lastseat.outbox;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import lastseat.config.LastseatConfig;
import lastseat.config.OutboxConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The outbox keys of application.yaml are read as written, and a bad one is refused naming the key. */
class OutboxConfigTest {

    @Test
    void theShippedDefaultsAreRead() {
        OutboxConfig config = LastseatConfig.from(Config.just(ConfigSources.classpath("application.yaml"))).outbox();

        assertThat(config).isEqualTo(new OutboxConfig(Duration.ofMillis(500), 50, "/emails", "/refunds", Duration.ofSeconds(2),
                                                      Duration.ofSeconds(1), Duration.ofMinutes(5), 20, Duration.ofHours(24)));
    }

    @ParameterizedTest(name = "{0} = {1}")
    @CsvSource({
            "outbox.interval, 0ms, outbox.interval",
            "outbox.batch, 0, outbox.batch",
            "outbox.email-path, emails, outbox.email-path",
            "outbox.call-timeout, soon, outbox.call-timeout",
            "outbox.max-backoff, 500ms, outbox.max-backoff",
            "outbox.max-attempts, 0, outbox.max-attempts",
            "outbox.give-up-after, 1s, outbox.give-up-after",
    })
    void aBadValueIsRefusedNamingTheKey(String key, String value, String named) {
        Config config = Config.just(ConfigSources.create(Map.of(key, value)), ConfigSources.classpath("application.yaml"));

        assertThatThrownBy(() -> LastseatConfig.from(config))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(named);
    }
}
