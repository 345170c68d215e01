package lastseat.support;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.UUID;

import static org.junit.jupiter.api.Assumptions.abort;

/**
 * A database of a test class's own on the machine's PostgreSQL (127.0.0.1:5432, trust auth, user
 * {@code postgres}), as a JUnit extension: created before the class's first test, dropped after its last.
 * When PostgreSQL cannot be used the class is skipped with a loud {@code SKIPPED} line — unless
 * {@code LASTSEAT_REQUIRE_POSTGRES=1} (CI), then it fails.
 *
 * <pre>{@code
 * @RegisterExtension @Order(1) static final FreshPostgres postgres = new FreshPostgres("lastseat_x_");
 * @RegisterExtension @Order(2) static final LastseatApp app = LastseatApp.with(postgres.settings());
 * }</pre>
 *
 * <p>Hazard: register it before the app that uses it ({@code @Order}): JUnit starts extensions in that
 * order and closes them in reverse, so the database exists before the app opens its pool and is dropped
 * only after the app has closed it. An app registered first would start against no database.
 */
public final class FreshPostgres implements BeforeAllCallback, AfterAllCallback {
    public static final String SERVER = "jdbc:postgresql://127.0.0.1:5432/";
    private final String name;
    private boolean created;

    /** A database named {@code prefix} and 12 random hex digits; nothing is created before the class starts. */
    public FreshPostgres(String prefix) {
        this.name = prefix + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    public String url() {
        return SERVER + name;
    }

    /** The configuration keys of an app on this database. */
    public Map<String, String> settings() {
        return Map.of("db.url", url(), "db.user", "postgres", "db.password", "");
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        try (Connection c = DriverManager.getConnection(SERVER + "postgres", "postgres", "");
             Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE " + name);
            created = true;
        } catch (SQLException e) {
            String why = "PostgreSQL at 127.0.0.1:5432 is not usable (" + e.getMessage() + ")";
            if ("1".equals(System.getenv("LASTSEAT_REQUIRE_POSTGRES"))) {
                throw new AssertionError(why + " and LASTSEAT_REQUIRE_POSTGRES=1", e);
            }
            System.err.println("\n*** SKIPPED " + context.getRequiredTestClass().getSimpleName() + ": " + why + " ***\n");
            abort("SKIPPED: " + why);
        }
    }

    @Override
    public void afterAll(ExtensionContext context) throws SQLException {
        if (!created) {
            return;
        }
        try (Connection c = DriverManager.getConnection(SERVER + "postgres", "postgres", "");
             Statement s = c.createStatement()) {
            s.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        }
    }
}
