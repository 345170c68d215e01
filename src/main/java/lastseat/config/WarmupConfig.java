package lastseat.config;

import java.time.Duration;

/**
 * The {@code warm-up} section: before a process listens, it buys from a throwaway copy of itself
 * ({@code lastseat.Warmup}), so that its first buyers do not pay for its class loading and first
 * compilations.
 *
 * @param purchases {@code warm-up.purchases}: purchase requests sent to the throwaway copy; 0 turns the
 *                  warm-up off
 * @param maxTime   {@code warm-up.max-time}: the buying and the wait for the JIT end at this bound,
 *                  whatever was sent; the copy's own start comes before it
 * @param postgresSchema {@code warm-up.postgres-schema}: on PostgreSQL, the copy keeps its data in a schema
 *                  of its own in {@code db.url}'s database, created for it and dropped after it, so that the
 *                  driver's code is compiled too; false, or on H2: an in-memory H2
 */
public record WarmupConfig(int purchases, Duration maxTime, boolean postgresSchema) {

    public WarmupConfig {
        Check.between("warm-up.purchases", purchases, 0, 100_000);
        Check.between("warm-up.max-time", maxTime, Duration.ofMillis(100), Duration.ofMinutes(1));
    }

    static WarmupConfig read(Reader keys) {
        return new WarmupConfig(keys.integer("warm-up.purchases"), keys.duration("warm-up.max-time"),
                                keys.flag("warm-up.postgres-schema"));
    }

    public boolean enabled() {
        return purchases > 0;
    }
}
