package lastseat.config;

import java.time.Duration;

/**
 * The {@code db} section: the database and its pool. {@code poolSize} bounds every database
 * conversation of this process, including the ones that many virtual threads would otherwise start
 * at once (at least 2: the migration and the pool's own check need one each at start).
 * {@code connectionTimeout} bounds a wait for a connection and {@code lockTimeout} a wait for a row
 * another transaction holds, on H2 and PostgreSQL alike.
 *
 * @param url               {@code db.url}: a JDBC URL, H2 or PostgreSQL
 * @param user              {@code db.user}
 * @param password          {@code db.password}: never shown by {@link #toString()}
 * @param poolSize          {@code db.pool-size}: connections
 * @param connectionTimeout {@code db.connection-timeout}
 * @param lockTimeout       {@code db.lock-timeout}
 * @param h2HousekeepingInterval {@code db.h2-housekeeping-interval}: how often, at most, an H2 file's unused
 *                          space is given back to new commits ({@code H2CommitGate}); zero: never, the file only grows
 * @param h2CacheMegabytes  {@code db.h2-cache-megabytes}: an H2 file's page cache (H2's {@code CACHE_SIZE}), which also
 *                          holds every page written; a housekeeping pass that finds the pages it rewrites there holds
 *                          commits back for less time
 */
public record DbConfig(String url, String user, String password, int poolSize, Duration connectionTimeout,
                       Duration lockTimeout, Duration h2HousekeepingInterval, int h2CacheMegabytes) {

    public DbConfig {
        Check.between("db.pool-size", poolSize, 2, 200);
        Check.between("db.connection-timeout", connectionTimeout, Duration.ofMillis(250), Duration.ofMinutes(1));
        Check.between("db.lock-timeout", lockTimeout, Duration.ofMillis(10), Duration.ofMinutes(1));
        Check.zeroOrBetween("db.h2-housekeeping-interval", h2HousekeepingInterval, Duration.ofMillis(100), Duration.ofMinutes(1));
        Check.between("db.h2-cache-megabytes", h2CacheMegabytes, 1, 16_384);
    }

    static DbConfig read(Reader keys) {
        return new DbConfig(
                keys.string("db.url"),
                keys.string("db.user"),
                keys.string("db.password"),
                keys.integer("db.pool-size"),
                keys.duration("db.connection-timeout"),
                keys.duration("db.lock-timeout"),
                keys.duration("db.h2-housekeeping-interval"),
                keys.integer("db.h2-cache-megabytes"));
    }

    /** The whole configuration may be printed; the password must not be. */
    @Override
    public String toString() {
        return "DbConfig[url=" + url + ", user=" + user + ", password=" + (password == null || password.isEmpty() ? "" : "***")
               + ", poolSize=" + poolSize + ", connectionTimeout=" + connectionTimeout + ", lockTimeout=" + lockTimeout
               + ", h2HousekeepingInterval=" + h2HousekeepingInterval + ", h2CacheMegabytes=" + h2CacheMegabytes + "]";
    }
}
