package lastseat.config;

import java.time.Duration;

/**
 * The {@code outbox} section: how the outbox worker delivers. A pass every {@code interval} over at
 * most {@code batch} due rows; emails ({@code *-email} kinds) go to {@code emailPath}, refunds to
 * {@code refundPath}; one delivery waits at most {@code callTimeout} (itself capped by
 * {@code outside.call-timeout}). After a failed delivery the row waits {@code backoff} doubled per
 * attempt up to {@code maxBackoff}, drawn between half and all of it; it becomes DEAD after
 * {@code maxAttempts} attempts or {@code giveUpAfter} after it was written, whichever comes first.
 * A pass makes at most {@code concurrency} deliveries at once, and a pass that took a whole batch is
 * followed by the next at once, so that the outbox keeps up with an on-sale's confirmations. A SENT row
 * is deleted {@code retention} after it was sent, at most {@code pruneBatch} rows a pass.
 *
 * <p>The ranges keep the worker runnable whoever builds the record (tests do, directly): a zero
 * interval would spin, a zero backoff would retry a failing receiver in a tight loop.
 *
 * @param interval    {@code outbox.interval}
 * @param batch       {@code outbox.batch}: rows one pass delivers at most
 * @param emailPath   {@code outbox.email-path}, under {@code outside.base-url}
 * @param refundPath  {@code outbox.refund-path}, under {@code outside.base-url}
 * @param callTimeout {@code outbox.call-timeout}
 * @param backoff     {@code outbox.backoff}
 * @param maxBackoff  {@code outbox.max-backoff}
 * @param maxAttempts {@code outbox.max-attempts}: deliveries tried before the row is DEAD
 * @param giveUpAfter {@code outbox.give-up-after}
 * @param concurrency {@code outbox.concurrency}: deliveries one pass makes at once
 * @param retention   {@code outbox.retention}: a SENT row is kept this long after it was sent, then deleted
 *                    (PENDING and DEAD rows are never deleted)
 * @param pruneBatch  {@code outbox.prune-batch}: SENT rows one pass deletes at most
 */
public record OutboxConfig(Duration interval, int batch, String emailPath, String refundPath, Duration callTimeout,
                           Duration backoff, Duration maxBackoff, int maxAttempts, Duration giveUpAfter,
                           int concurrency, Duration retention, int pruneBatch) {

    public OutboxConfig {
        Check.between("outbox.interval", interval, Duration.ofMillis(10), Duration.ofHours(1));
        Check.between("outbox.batch", batch, 1, 1000);
        Check.path("outbox.email-path", emailPath);
        Check.path("outbox.refund-path", refundPath);
        Check.between("outbox.call-timeout", callTimeout, Duration.ofMillis(10), Duration.ofSeconds(60));
        Check.between("outbox.backoff", backoff, Duration.ofMillis(10), Duration.ofHours(1));
        Check.between("outbox.max-backoff", maxBackoff, Duration.ofMillis(10), Duration.ofDays(1));
        Check.between("outbox.max-attempts", maxAttempts, 1, 1000);
        Check.between("outbox.give-up-after", giveUpAfter, Duration.ofMinutes(1), Duration.ofDays(30));
        Check.between("outbox.concurrency", concurrency, 1, 256);
        // At least a minute, so that a row just SENT can still be looked at (GET /outbox?state=sent).
        Check.between("outbox.retention", retention, Duration.ofMinutes(1), Duration.ofDays(3650));
        Check.between("outbox.prune-batch", pruneBatch, 1, 10_000);
    }

    static OutboxConfig read(Reader keys) {
        return new OutboxConfig(
                keys.duration("outbox.interval"),
                keys.integer("outbox.batch"),
                keys.string("outbox.email-path"),
                keys.string("outbox.refund-path"),
                keys.duration("outbox.call-timeout"),
                keys.duration("outbox.backoff"),
                keys.duration("outbox.max-backoff"),
                keys.integer("outbox.max-attempts"),
                keys.duration("outbox.give-up-after"),
                keys.integer("outbox.concurrency"),
                keys.duration("outbox.retention"),
                keys.integer("outbox.prune-batch"));
    }
}
