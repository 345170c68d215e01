package lastseat.db;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/**
 * The database and its pool. {@code poolSize} bounds every database conversation of this process,
 * including the ones that many virtual threads would otherwise start at once.
 */
public record DbConfig(String url, String user, String password, int poolSize, Duration connectionTimeout) {

    public static DbConfig from(Config db) {
        return new DbConfig(
                Values.string(db, "url"),
                Values.string(db, "user", ""),
                Values.string(db, "password", ""),
                Values.integer(db, "pool-size", 1, 200),
                Values.duration(db, "connection-timeout", Duration.ofMillis(250), Duration.ofMinutes(1)));
    }
}
