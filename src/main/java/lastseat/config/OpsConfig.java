package lastseat.config;

import java.time.Duration;

/**
 * The {@code ops} section: the operator's page on the admin port ({@code /ops/}).
 *
 * @param pollInterval {@code ops.poll-interval}: how often a watched event's seats are read from the
 *                     database (one reader per watched event, whatever the number of viewers)
 * @param maxStreams   {@code ops.max-streams}: seat-map streams one instance serves at once; past it 503
 * @param keepAlive    {@code ops.keep-alive}: a comment sent on a quiet stream this often, so that
 *                     proxies keep it open and a viewer that left is noticed
 */
public record OpsConfig(Duration pollInterval, int maxStreams, Duration keepAlive) {

    public OpsConfig {
        Check.between("ops.poll-interval", pollInterval, Duration.ofMillis(50), Duration.ofSeconds(10));
        Check.between("ops.max-streams", maxStreams, 1, 1000);
        Check.between("ops.keep-alive", keepAlive, Duration.ofSeconds(1), Duration.ofMinutes(5));
    }

    static OpsConfig read(Reader keys) {
        return new OpsConfig(keys.duration("ops.poll-interval"), keys.integer("ops.max-streams"), keys.duration("ops.keep-alive"));
    }
}
