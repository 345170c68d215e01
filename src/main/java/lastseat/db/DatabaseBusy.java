package lastseat.db;

import lastseat.web.Problem;

import java.time.Duration;
import java.util.Map;

/**
 * 503: no pooled connection came within {@code db.connection-timeout}. The process is over its
 * capacity; nothing was written by the request that got this, so it may be retried after a pause.
 */
public final class DatabaseBusy extends Problem {
    DatabaseBusy(Throwable cause) {
        super(503, "database-busy", "Busy",
              "The server has more purchases in progress than its database connections can serve; nothing was changed, "
              + "try again after Retry-After", Map.of(), Duration.ofSeconds(1), cause);
    }
}
