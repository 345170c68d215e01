package lastseat.db;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Together;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.abort;

/**
 * The same migrations and SQL on PostgreSQL (127.0.0.1:5432, a fresh database per run). Skipped,
 * loudly, when PostgreSQL is not reachable — unless {@code LASTSEAT_REQUIRE_POSTGRES=1} (CI), then it fails.
 */
class PostgresTest {
    private static final String SERVER = "jdbc:postgresql://127.0.0.1:5432/";
    private static final String DATABASE = "lastseat_test_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);

    // Registered in this order: JUnit starts them in order and closes them in reverse, so the database
    // exists before the app opens its pool and is dropped only after the app has closed it.
    @RegisterExtension
    @Order(1)
    static final FreshDatabase database = new FreshDatabase();

    @RegisterExtension
    @Order(2)
    static final LastseatApp app = LastseatApp.with(Map.of("db.url", SERVER + DATABASE, "db.user", "postgres", "db.password", ""));

    /** A database of this class's own; without a usable PostgreSQL the class is skipped (failed under CI) before the app starts. */
    static final class FreshDatabase implements BeforeAllCallback, AfterAllCallback {
        private boolean created;

        @Override
        public void beforeAll(ExtensionContext context) {
            try (Connection c = DriverManager.getConnection(SERVER + "postgres", "postgres", "");
                 Statement s = c.createStatement()) {
                s.execute("CREATE DATABASE " + DATABASE);
                created = true;
            } catch (SQLException e) {
                String why = "PostgreSQL at 127.0.0.1:5432 is not usable (" + e.getMessage() + ")";
                if ("1".equals(System.getenv("LASTSEAT_REQUIRE_POSTGRES"))) {
                    throw new AssertionError(why + " and LASTSEAT_REQUIRE_POSTGRES=1", e);
                }
                System.err.println("\n*** SKIPPED PostgresTest: " + why + " ***\n");
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
                s.execute("DROP DATABASE IF EXISTS " + DATABASE + " WITH (FORCE)");
            }
        }
    }

    @Test
    void aPurchaseIsConfirmedOnPostgresql() {
        String event = app.newEvent("A1", "A2");

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A2", "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(201);
        assertThat(answer.json().path("seats").toString()).isEqualTo("[\"A1\",\"A2\"]");
        assertThat(app.client().event(event).path("sold").asInt()).isEqualTo(2);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aQuantityPurchaseTakesFreeSeatsInOrderOnPostgresql() {
        String event = app.newEvent(5);
        app.client().purchaseSeats(UUID.randomUUID().toString(), event, "1");

        Answer answer = app.client().purchaseQuantity(UUID.randomUUID().toString(), event, 2, "ada");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(201);
        assertThat(answer.json().path("seats").toString()).isEqualTo("[\"2\",\"3\"]");
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void lastSeatIsSoldOnceOnPostgresqlWhenFiftyBuyersArriveTogether() {
        String event = app.newEvent("A1");

        List<Answer> answers = Together.run(50, i -> app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1"));

        Map<Integer, Long> byStatus = answers.stream().collect(Collectors.groupingBy(Answer::status, Collectors.counting()));
        assertThat(byStatus).as(byStatus.toString()).containsEntry(201, 1L).containsEntry(409, 49L);
        Invariants.nothingHeld(app, event);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }
}
