package lastseat.db;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/**
 * The database and its pool. {@code poolSize} bounds every database conversation of this process,
 * including the ones that many virtual threads would otherwise start at once (at least 2: the
 * migration and the pool's own check need one each at start). {@code connectionTimeout} bounds a
 * wait for a connection and {@code lockTimeout} a wait for a row another transaction holds, on H2
 * and PostgreSQL alike.
 */
public record DbConfig(String url, String user, String password, int poolSize, Duration connectionTimeout,
                       Duration lockTimeout) {

    public static DbConfig from(Config db) {
        return new DbConfig(
                Values.string(db, "url"),
                Values.string(db, "user", ""),
                Values.string(db, "password", ""),
                Values.integer(db, "pool-size", 2, 200),
                Values.duration(db, "connection-timeout", Duration.ofMillis(250), Duration.ofMinutes(1)),
                Values.duration(db, "lock-timeout", Duration.ofMillis(10), Duration.ofMinutes(1)));
    }
}
