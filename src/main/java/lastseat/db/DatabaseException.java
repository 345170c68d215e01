package lastseat.db;

import java.sql.SQLException;

/** A database conversation failed; the transaction it belonged to was rolled back. */
public final class DatabaseException extends RuntimeException {
    public DatabaseException(SQLException cause) {
        super(cause.getMessage(), cause);
    }
}
