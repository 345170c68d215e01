package lastseat.web;

import lastseat.db.DatabaseBusy;

import java.time.Duration;
import java.util.Map;

/**
 * What a failure that nobody answered becomes on the wire: the one mapping from exceptions to
 * problems, used by the routing's error handler and by the routes that must answer a failure
 * themselves. A {@link Problem} (bad input) is itself; an exhausted pool or a lock not granted is
 * 503 {@code database-busy} (nothing was written, retry shortly); anything else is 500, saying only
 * what the caller may rely on. The log keeps the exception; the body never does.
 */
public final class Failures {
    /** How long a client is asked to wait after {@code database-busy}. */
    static final Duration BUSY_RETRY_AFTER = Duration.ofSeconds(1);

    private Failures() {
    }

    /** The problem for {@code failure}; {@code internal} is the 500's detail, for the caller to state what it knows. */
    public static Problem problemFor(Throwable failure, String internal) {
        return switch (failure) {
            case Problem problem -> problem;
            case DatabaseBusy busy -> new Problem(503, "database-busy", "Busy",
                    "The server has more work in progress than its database connections can serve; nothing was changed, "
                    + "try again after Retry-After", Map.of(), BUSY_RETRY_AFTER, null);
            default -> new Problem(500, "internal", "Internal error", internal);
        };
    }
}
