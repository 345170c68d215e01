package lastseat.config;

import java.time.Duration;

/**
 * The {@code drills} section: the server-side drill endpoints.
 *
 * <p>Hazard: the stampede's unsafe mode double-books seats on purpose, so the endpoints exist only
 * when {@code drills.enabled} is true; application.yaml ships it false.
 *
 * @param enabled   {@code drills.enabled}
 * @param maxBuyers {@code drills.max-buyers}: the most buyers one stampede may release
 * @param maxPause  {@code drills.max-pause}: the longest a stampede buyer waits in its pause for the others
 */
public record DrillsConfig(boolean enabled, int maxBuyers, Duration maxPause) {

    public DrillsConfig {
        Check.between("drills.max-buyers", maxBuyers, 2, 10_000);
        Check.between("drills.max-pause", maxPause, Duration.ofMillis(10), Duration.ofSeconds(30));
    }

    static DrillsConfig read(Reader keys) {
        return new DrillsConfig(keys.flag("drills.enabled"), keys.integer("drills.max-buyers"),
                                keys.duration("drills.max-pause"));
    }
}
