package lastseat.config;

import java.time.Duration;

/**
 * The {@code reconcile} section: the reconciler of PAYMENT_UNKNOWN purchases.
 *
 * @param interval    {@code reconcile.interval}: how often it runs
 * @param batch       {@code reconcile.batch}: purchases one pass asks about at most
 * @param settleTime  {@code reconcile.settle-time}: how long after the payment went unknown the first question
 *                    waits, so that a request still travelling has arrived before the provider is asked
 * @param callTimeout {@code reconcile.call-timeout}: the cap on one question
 * @param backoff     {@code reconcile.backoff}: the pause after an unanswered question, doubled each time
 * @param maxBackoff  {@code reconcile.max-backoff}: the most that pause grows to
 * @param giveUpAfter {@code reconcile.give-up-after}: how long a purchase may stay unknown before an operator
 *                    is shown it (PAYMENT_UNRESOLVED, seats still held)
 */
public record ReconcileConfig(Duration interval, int batch, Duration settleTime, Duration callTimeout, Duration backoff,
                              Duration maxBackoff, Duration giveUpAfter) {

    public ReconcileConfig {
        Check.between("reconcile.interval", interval, Duration.ofMillis(10), Duration.ofMinutes(10));
        Check.between("reconcile.batch", batch, 1, 10_000);
        Check.between("reconcile.settle-time", settleTime, Duration.ZERO, Duration.ofHours(1));
        Check.between("reconcile.call-timeout", callTimeout, Duration.ofMillis(10), Duration.ofMinutes(1));
        Check.between("reconcile.backoff", backoff, Duration.ofMillis(1), Duration.ofHours(1));
        Check.between("reconcile.max-backoff", maxBackoff, Duration.ofMillis(1), Duration.ofDays(1));
        Check.between("reconcile.give-up-after", giveUpAfter, Duration.ofSeconds(1), Duration.ofDays(30));
    }

    static ReconcileConfig read(Reader keys) {
        return new ReconcileConfig(
                keys.duration("reconcile.interval"),
                keys.integer("reconcile.batch"),
                keys.duration("reconcile.settle-time"),
                keys.duration("reconcile.call-timeout"),
                keys.duration("reconcile.backoff"),
                keys.duration("reconcile.max-backoff"),
                keys.duration("reconcile.give-up-after"));
    }
}
