package lastseat.inventory;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/**
 * Limits of the inventory: how large an event may be, how many seats one purchase may take, how
 * long a hold lasts before the sweeper may expire it, and how many rounds a quantity purchase
 * makes to find free seats when others take its candidates first.
 */
public record InventoryConfig(int maxCapacity, int maxSeatsPerPurchase, Duration holdTtl, int reserveRounds) {

    public static InventoryConfig from(Config config) {
        return new InventoryConfig(
                Values.integer(config.get("events"), "max-capacity", 1, 100_000),
                Values.integer(config.get("purchase"), "max-seats", 1, 100),
                Values.duration(config.get("purchase"), "hold-ttl", Duration.ofMillis(100), Duration.ofHours(1)),
                Values.integer(config.get("purchase"), "reserve-rounds", 1, 10));
    }
}
