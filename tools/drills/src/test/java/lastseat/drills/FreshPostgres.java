package lastseat.drills;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

import static org.junit.jupiter.api.Assumptions.abort;

/**
 * A database of its own on the machine's PostgreSQL (127.0.0.1:5432, trust auth), for one test class,
 * dropped by {@link #close()}. When PostgreSQL cannot be used the test is skipped with a loud line —
 * unless {@code LASTSEAT_REQUIRE_POSTGRES=1} (CI), then it fails.
 */
final class FreshPostgres implements AutoCloseable {
    static final String SERVER = "jdbc:postgresql://127.0.0.1:5432/";
    private final String name;
    private boolean created;

    /** A name starting with {@code prefix}; nothing is created until {@link #create}. */
    FreshPostgres(String prefix) {
        this.name = prefix + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    String name() {
        return name;
    }

    String url() {
        return SERVER + name;
    }

    /** Creates the database, or skips (fails, in CI) the calling test class naming why not. */
    void create(String testClass) {
        try (Connection c = DriverManager.getConnection(SERVER + "postgres", "postgres", "");
             Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE " + name);
            created = true;
        } catch (SQLException e) {
            String why = "PostgreSQL at 127.0.0.1:5432 is not usable (" + e.getMessage() + ")";
            if ("1".equals(System.getenv("LASTSEAT_REQUIRE_POSTGRES"))) {
                throw new AssertionError(why + " and LASTSEAT_REQUIRE_POSTGRES=1", e);
            }
            System.err.println("\n*** SKIPPED " + testClass + ": " + why + " ***\n");
            abort("SKIPPED: " + why);
        }
    }

    @Override
    public void close() throws SQLException {
        if (created) {
            try (Connection c = DriverManager.getConnection(SERVER + "postgres", "postgres", "");
                 Statement s = c.createStatement()) {
                s.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
            }
        }
    }
}
