package lastseat.purchase;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/**
 * The reconciler of PAYMENT_UNKNOWN purchases: how often it runs and how many it asks about per
 * pass; how long after the payment went unknown the first question waits ({@code settleTime}, so
 * that a request still travelling has arrived before the provider is asked); the cap on one
 * question; the backoff between unanswered questions; and how long a purchase may stay unknown
 * before an operator is shown it ({@code giveUpAfter}: PAYMENT_UNRESOLVED, seats still held).
 */
public record ReconcileConfig(Duration interval, int batch, Duration settleTime, Duration callTimeout, Duration backoff,
                              Duration maxBackoff, Duration giveUpAfter) {

    public static ReconcileConfig from(Config config) {
        Config reconcile = config.get("reconcile");
        ReconcileConfig read = new ReconcileConfig(
                Values.duration(reconcile, "interval", Duration.ofMillis(10), Duration.ofMinutes(10)),
                Values.integer(reconcile, "batch", 1, 10_000),
                Values.duration(reconcile, "settle-time", Duration.ZERO, Duration.ofHours(1)),
                Values.duration(reconcile, "call-timeout", Duration.ofMillis(10), Duration.ofMinutes(1)),
                Values.duration(reconcile, "backoff", Duration.ofMillis(1), Duration.ofHours(1)),
                Values.duration(reconcile, "max-backoff", Duration.ofMillis(1), Duration.ofDays(1)),
                Values.duration(reconcile, "give-up-after", Duration.ofSeconds(1), Duration.ofDays(30)));
        if (read.maxBackoff().compareTo(read.backoff()) < 0) {
            throw new IllegalStateException("Configuration reconcile.max-backoff (" + read.maxBackoff()
                                            + ") must not be shorter than reconcile.backoff (" + read.backoff() + ")");
        }
        return read;
    }
}
