package lastseat.checks;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/**
 * Where the fraud and tax services answer, the Retry-After told to a buyer when one is down, and
 * whether the two run side by side (the product) or one after the other ({@code sequential}: only
 * for the benchmark's comparison).
 */
public record ChecksConfig(String fraudPath, String taxPath, Duration retryAfter, boolean sequential) {

    public static ChecksConfig from(Config config) {
        Config checks = config.get("checks");
        return new ChecksConfig(
                Values.path(checks, "fraud-path", "/fraud/checks"),
                Values.path(checks, "tax-path", "/tax/quotes"),
                Values.duration(config.get("purchase"), "retry-after", Duration.ofSeconds(1), Duration.ofMinutes(10)),
                sequential(checks));
    }

    private static boolean sequential(Config checks) {
        String mode = checks.get("mode").asString().orElse("parallel");
        return switch (mode) {
            case "parallel" -> false;
            case "sequential" -> true;
            default -> throw new IllegalStateException("Configuration checks.mode must be parallel or sequential, got '" + mode + "'");
        };
    }
}
