package lastseat.drill;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/**
 * Whether the drill endpoints exist ({@code drills.enabled}; off unless set), the most buyers one
 * stampede may release, and the longest a stampede buyer waits in its pause for the others.
 */
public record DrillsConfig(boolean enabled, int maxBuyers, Duration maxPause) {

    public static DrillsConfig from(Config config) {
        Config drills = config.get("drills");
        return new DrillsConfig(
                drills.get("enabled").asBoolean().orElse(false),
                Values.integer(drills, "max-buyers", 2, 10_000),
                Values.duration(drills, "max-pause", Duration.ofMillis(10), Duration.ofSeconds(30)));
    }
}
