package lastseat.purchase;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/**
 * The purchase's deadline (from arrival to answer), the largest body a purchase may send, the
 * {@code Retry-After} of its 503 answers, and how many purchases this process runs at once
 * ({@code maxInFlight}, per instance: every instance counts only its own). A purchase that has waited longer than
 * {@code shedAfter} of its deadline before it could reserve is answered 503 instead (overload).
 */
public record PurchaseConfig(Duration deadline, int maxBodyBytes, Duration retryAfter, int maxInFlight,
                             Duration shedAfter) {

    public static PurchaseConfig from(Config config) {
        Config purchase = config.get("purchase");
        return new PurchaseConfig(
                Values.duration(purchase, "deadline", Duration.ofMillis(50), Duration.ofSeconds(30)),
                Values.integer(purchase, "max-body-bytes", 256, 1024 * 1024),
                Values.duration(purchase, "retry-after", Duration.ofSeconds(1), Duration.ofMinutes(10)),
                Values.integer(purchase, "max-in-flight", 1, 100_000),
                Values.duration(purchase, "shed-after", Duration.ZERO, Duration.ofSeconds(30)));
    }
}
