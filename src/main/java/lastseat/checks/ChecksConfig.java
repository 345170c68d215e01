package lastseat.checks;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/**
 * Where the fraud and tax services answer, and the Retry-After told to a buyer when one is down.
 */
public record ChecksConfig(String fraudPath, String taxPath, Duration retryAfter) {

    public static ChecksConfig from(Config config) {
        Config checks = config.get("checks");
        return new ChecksConfig(
                Values.path(checks, "fraud-path", "/fraud/checks"),
                Values.path(checks, "tax-path", "/tax/quotes"),
                Values.duration(config.get("purchase"), "retry-after", Duration.ofSeconds(1), Duration.ofMinutes(10)));
    }
}
