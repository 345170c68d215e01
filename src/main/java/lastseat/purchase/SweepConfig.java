package lastseat.purchase;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/**
 * The sweeper: how often it runs, how many purchases one sweep moves, and how long after its
 * deadline a purchase still HELD or PAYING counts as left by a process that stopped.
 */
public record SweepConfig(Duration interval, int batch, Duration abandonedAfter) {

    public static SweepConfig from(Config config) {
        Config purchase = config.get("purchase");
        return new SweepConfig(
                Values.duration(purchase, "sweep-interval", Duration.ofMillis(10), Duration.ofMinutes(10)),
                Values.integer(purchase, "sweep-batch", 1, 10_000),
                Values.duration(purchase, "abandoned-after", Duration.ofMillis(100), Duration.ofHours(1)));
    }
}
