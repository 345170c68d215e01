package lastseat.purchase;

import lastseat.db.Database;
import org.h2.api.Trigger;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * One table of an H2 database made busy for one kind of statement, until closed: each read of it, or
 * each insert into it, fails as a row lock not granted within {@code db.lock-timeout} does, which the
 * service takes for {@link lastseat.db.DatabaseBusy}. The rest of the database works, so a test can
 * make exactly one step of a request meet a busy database.
 *
 * <p>Hazard: a trigger is the database's own; close it (try-with-resources), or every later read of
 * the table fails too.
 */
final class BusyTable implements AutoCloseable {
    private final Database db;
    private final String name;

    private BusyTable(Database db, String name) {
        this.db = db;
        this.name = name;
    }

    /** Every {@code SELECT} that reads {@code table}. */
    static BusyTable reads(Database db, String table) {
        return create(db, "busy_reads_" + table, "BEFORE SELECT ON " + table);
    }

    /** Every row inserted into {@code table}. */
    static BusyTable inserts(Database db, String table) {
        return create(db, "busy_inserts_" + table, "BEFORE INSERT ON " + table + " FOR EACH ROW");
    }

    private static BusyTable create(Database db, String name, String when) {
        execute(db, "CREATE TRIGGER " + name + " " + when + " CALL \"" + Refuse.class.getName() + "\"");
        return new BusyTable(db, name);
    }

    @Override
    public void close() {
        execute(db, "DROP TRIGGER " + name);
    }

    private static void execute(Database db, String sql) {
        db.read(c -> {
            try (Statement statement = c.createStatement()) {
                return statement.execute(sql);
            }
        });
    }

    /** What H2 calls: the error H2 itself raises for a lock not granted in time (LOCK_TIMEOUT_1). */
    public static final class Refuse implements Trigger {
        @Override
        public void fire(Connection connection, Object[] oldRow, Object[] newRow) throws SQLException {
            throw new SQLException("Timeout trying to lock table (a test's)", "HYT00", 50200);
        }
    }
}
