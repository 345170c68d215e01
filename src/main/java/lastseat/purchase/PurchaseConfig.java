package lastseat.purchase;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/** The purchase's deadline (from arrival to answer) and the largest body a purchase may send. */
public record PurchaseConfig(Duration deadline, int maxBodyBytes, Duration retryAfter) {

    public static PurchaseConfig from(Config config) {
        Config purchase = config.get("purchase");
        return new PurchaseConfig(
                Values.duration(purchase, "deadline", Duration.ofMillis(50), Duration.ofSeconds(30)),
                Values.integer(purchase, "max-body-bytes", 256, 1024 * 1024),
                Values.duration(purchase, "retry-after", Duration.ofSeconds(1), Duration.ofMinutes(10)));
    }
}
