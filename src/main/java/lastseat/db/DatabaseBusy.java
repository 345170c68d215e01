package lastseat.db;

/**
 * No pooled connection came within {@code db.connection-timeout}, or a row lock was not granted
 * within {@code db.lock-timeout} — or, for work with a deadline, before the deadline: the process is
 * over its capacity. The transaction was rolled back,
 * so the work may be tried again after a pause (the web edge answers 503 {@code database-busy}).
 */
public final class DatabaseBusy extends RuntimeException {
    DatabaseBusy(Throwable cause) {
        super("the database is busy: " + cause.getMessage(), cause);
    }
}
