package lastseat.testkit;

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
 * A database of a test's own on the machine's PostgreSQL (127.0.0.1:5432, trust auth, user
 * {@code postgres}). When PostgreSQL cannot be used the test is skipped with a loud {@code SKIPPED}
 * line — unless {@code LASTSEAT_REQUIRE_POSTGRES=1} (CI), then it fails. Two ways to hold one:
 *
 * <pre>{@code
 * // a JUnit extension: created before the class's first test, dropped after its last
 * @RegisterExtension @Order(1) static final FreshPostgres postgres = new FreshPostgres("lastseat_x_");
 * @RegisterExtension @Order(2) static final LastseatApp app = LastseatApp.with(postgres.settings());
 * // by hand, for a test that starts processes of its own
 * database.create("MyTest"); ... database.close();
 * }</pre>
 *
 * <p>Hazard: as an extension, register it before the app that uses it ({@code @Order}): JUnit starts
 * extensions in that order and closes them in reverse, so the database exists before the app opens its
 * pool and is dropped only after the app has closed it.
 */
public final class FreshPostgres implements BeforeAllCallback, AfterAllCallback, AutoCloseable {
    public static final String SERVER = "jdbc:postgresql://127.0.0.1:5432/";
    private final String name;
    private boolean created;

    /** A database named {@code prefix} and 12 random hex digits; nothing is created before {@link #create}. */
    public FreshPostgres(String prefix) {
        this.name = prefix + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    public String name() {
        return name;
    }

    public String url() {
        return SERVER + name;
    }

    /** The configuration keys of a lastseat on this database. */
    public Map<String, String> settings() {
        return Map.of("db.url", url(), "db.user", "postgres", "db.password", "");
    }

    /** {@link #settings()} and one key more. */
    public Map<String, String> settings(String key, String value) {
        Map<String, String> all = new java.util.HashMap<>(settings());
        all.put(key, value);
        return Map.copyOf(all);
    }

    /** Creates the database, or skips (fails, in CI) {@code testClass} naming why not. */
    public void create(String testClass) {
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

    /** Drops the database, if it was created. */
    @Override
    public void close() throws SQLException {
        if (created) {
            try (Connection c = DriverManager.getConnection(SERVER + "postgres", "postgres", "");
                 Statement s = c.createStatement()) {
                s.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
            }
        }
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        create(context.getRequiredTestClass().getSimpleName());
    }

    @Override
    public void afterAll(ExtensionContext context) throws SQLException {
        close();
    }
}
