package lastseat.outbox;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;
import java.util.Objects;

/**
 * How the outbox worker delivers: a pass every {@code interval} over at most {@code batch} due rows;
 * emails ({@code *-email} kinds) go to {@code emailPath}, refunds to {@code refundPath}; one delivery
 * waits at most {@code callTimeout} (itself capped by {@code outside.call-timeout}). After a failed
 * delivery the row waits {@code backoff} doubled per attempt up to {@code maxBackoff}, drawn between
 * half and all of it; it becomes DEAD after {@code maxAttempts} attempts or {@code giveUpAfter} after
 * it was written, whichever comes first.
 *
 * <p>{@link #from(Config)} validates every key against its range with a sentence naming the key; the
 * canonical constructor (used directly by tests) only refuses values the worker cannot run with.
 */
public record OutboxConfig(Duration interval, int batch, String emailPath, String refundPath, Duration callTimeout,
                           Duration backoff, Duration maxBackoff, int maxAttempts, Duration giveUpAfter) {

    public OutboxConfig {
        Objects.requireNonNull(interval, "interval");
        Objects.requireNonNull(emailPath, "emailPath");
        Objects.requireNonNull(refundPath, "refundPath");
        Objects.requireNonNull(callTimeout, "callTimeout");
        Objects.requireNonNull(backoff, "backoff");
        Objects.requireNonNull(maxBackoff, "maxBackoff");
        Objects.requireNonNull(giveUpAfter, "giveUpAfter");
        // A zero interval would spin, a zero backoff would retry a failing receiver in a tight loop.
        if (interval.isNegative() || interval.isZero() || callTimeout.isNegative() || callTimeout.isZero()
            || backoff.isNegative() || backoff.isZero() || maxBackoff.compareTo(backoff) < 0
            || giveUpAfter.isNegative() || giveUpAfter.isZero() || batch < 1 || maxAttempts < 1) {
            throw new IllegalArgumentException("outbox configuration out of range: " + interval + ", batch " + batch
                                               + ", call timeout " + callTimeout + ", backoff " + backoff + ".." + maxBackoff
                                               + ", " + maxAttempts + " attempts, give up after " + giveUpAfter);
        }
    }

    public static OutboxConfig from(Config config) {
        Config outbox = config.get("outbox");
        Duration backoff = Values.duration(outbox, "backoff", Duration.ofMillis(10), Duration.ofHours(1));
        Duration maxBackoff = Values.duration(outbox, "max-backoff", Duration.ofMillis(10), Duration.ofDays(1));
        if (maxBackoff.compareTo(backoff) < 0) {
            throw new IllegalStateException("Configuration outbox.max-backoff (" + maxBackoff
                                            + ") must not be shorter than outbox.backoff (" + backoff + ")");
        }
        return new OutboxConfig(
                Values.duration(outbox, "interval", Duration.ofMillis(10), Duration.ofHours(1)),
                Values.integer(outbox, "batch", 1, 1000),
                Values.path(outbox, "email-path", "/emails"),
                Values.path(outbox, "refund-path", "/refunds"),
                Values.duration(outbox, "call-timeout", Duration.ofMillis(10), Duration.ofSeconds(60)),
                backoff,
                maxBackoff,
                Values.integer(outbox, "max-attempts", 1, 1000),
                Values.duration(outbox, "give-up-after", Duration.ofMinutes(1), Duration.ofDays(30)));
    }
}
