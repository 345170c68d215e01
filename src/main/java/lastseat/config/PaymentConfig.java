package lastseat.config;

import java.time.Duration;

/**
 * The {@code payment} section: the payment provider's bulkhead and call. {@code permits} caps
 * concurrent calls from this process; {@code maxWait} caps a wait for a permit (the purchase deadline
 * caps it further); a permit obtained with less than {@code minCallTime} left is given back unused
 * rather than starting a call that can only end as an unknown outcome. A charge makes at most
 * {@code maxAttempts} calls, pausing a jittered {@code retryBackoff} between them.
 *
 * @param path         {@code payment.path}, under {@code outside.base-url}
 * @param permits      {@code payment.permits}: concurrent payment calls from this process
 * @param maxWait      {@code payment.max-wait}
 * @param minCallTime  {@code payment.min-call-time}
 * @param maxAttempts  {@code payment.max-attempts}: calls per charge
 * @param retryBackoff {@code payment.retry-backoff}
 */
public record PaymentConfig(String path, int permits, Duration maxWait, Duration minCallTime, int maxAttempts,
                            Duration retryBackoff) {

    public PaymentConfig {
        Check.path("payment.path", path);
        Check.between("payment.permits", permits, 1, 1000);
        Check.between("payment.max-wait", maxWait, Duration.ZERO, Duration.ofMinutes(1));
        Check.between("payment.min-call-time", minCallTime, Duration.ZERO, Duration.ofSeconds(10));
        Check.between("payment.max-attempts", maxAttempts, 1, 5);
        Check.between("payment.retry-backoff", retryBackoff, Duration.ZERO, Duration.ofSeconds(5));
    }

    static PaymentConfig read(Reader keys) {
        return new PaymentConfig(
                keys.string("payment.path"),
                keys.integer("payment.permits"),
                keys.duration("payment.max-wait"),
                keys.duration("payment.min-call-time"),
                keys.integer("payment.max-attempts"),
                keys.duration("payment.retry-backoff"));
    }
}
