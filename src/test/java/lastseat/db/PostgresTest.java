package lastseat.db;

import lastseat.testkit.FreshPostgres;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Together;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The same migrations and SQL on PostgreSQL (127.0.0.1:5432, a fresh database per run). Skipped,
 * loudly, when PostgreSQL is not reachable — unless {@code LASTSEAT_REQUIRE_POSTGRES=1} (CI), then it fails.
 */
class PostgresTest {
    // Registered in this order: JUnit starts them in order and closes them in reverse, so the database
    // exists before the app opens its pool and is dropped only after the app has closed it.
    @RegisterExtension
    @Order(1)
    static final FreshPostgres database = new FreshPostgres("lastseat_test_");

    @RegisterExtension
    @Order(2)
    static final LastseatApp app = LastseatApp.with(database.settings());

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
