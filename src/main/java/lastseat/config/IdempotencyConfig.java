package lastseat.config;

import java.time.Duration;

/**
 * The {@code idempotency} section: how long an answered {@code Idempotency-Key} is kept.
 *
 * @param retention     {@code idempotency.retention}: an answered key is replayed this long after its
 *                      answer, then forgotten (a retry after that is a new purchase)
 * @param pruneInterval {@code idempotency.prune-interval}: how often the keys past retention are deleted
 * @param pruneBatch    {@code idempotency.prune-batch}: keys one pass deletes at most (one statement each batch)
 */
public record IdempotencyConfig(Duration retention, Duration pruneInterval, int pruneBatch) {

    public IdempotencyConfig {
        Check.between("idempotency.retention", retention, Duration.ofSeconds(1), Duration.ofDays(30));
        Check.between("idempotency.prune-interval", pruneInterval, Duration.ofMillis(10), Duration.ofHours(1));
        Check.between("idempotency.prune-batch", pruneBatch, 1, 10_000);
    }

    static IdempotencyConfig read(Reader keys) {
        return new IdempotencyConfig(keys.duration("idempotency.retention"), keys.duration("idempotency.prune-interval"),
                                     keys.integer("idempotency.prune-batch"));
    }
}
