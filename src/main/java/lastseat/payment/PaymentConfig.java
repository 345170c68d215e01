package lastseat.payment;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/**
 * The payment provider's bulkhead and call. {@code permits} caps concurrent calls from this
 * process; {@code maxWait} caps a wait for a permit (the purchase deadline caps it further);
 * a permit obtained with less than {@code minCallTime} left is given back unused rather than
 * starting a call that can only end as an unknown outcome. A charge makes at most
 * {@code maxAttempts} calls, pausing a jittered {@code retryBackoff} between them.
 */
public record PaymentConfig(String path, int permits, Duration maxWait, Duration minCallTime, int maxAttempts,
                            Duration retryBackoff) {

    public static PaymentConfig from(Config config) {
        Config payment = config.get("payment");
        return new PaymentConfig(
                Values.path(payment, "path", "/payments"),
                Values.integer(payment, "permits", 1, 1000),
                Values.duration(payment, "max-wait", Duration.ZERO, Duration.ofMinutes(1)),
                Values.duration(payment, "min-call-time", Duration.ZERO, Duration.ofSeconds(10)),
                Values.integer(payment, "max-attempts", 1, 5),
                Values.duration(payment, "retry-backoff", Duration.ZERO, Duration.ofSeconds(5)));
    }
}
