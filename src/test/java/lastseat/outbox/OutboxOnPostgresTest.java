package lastseat.outbox;

import lastseat.config.OutboxConfig;
import lastseat.db.Database;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.support.TestClock;
import lastseat.testkit.Answer;
import lastseat.testkit.FreshPostgres;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox's own SQL on PostgreSQL (the claim, SENT, and the prune's delete through a limited subquery),
 * with a worker of the test's on a clock the test moves. Skipped, loudly, when PostgreSQL is not reachable —
 * unless {@code LASTSEAT_REQUIRE_POSTGRES=1} (CI), then it fails.
 */
class OutboxOnPostgresTest {
    @RegisterExtension
    @Order(1)
    static final FreshPostgres database = new FreshPostgres("lastseat_outbox_");

    // The app's own worker waits an hour between passes, so that the rows are the test worker's to send.
    @RegisterExtension
    @Order(2)
    static final LastseatApp app = LastseatApp.with(database.settings("outbox.interval", "1h"));

    @Test
    void aConfirmationEmailIsSentThenDeletedOnceItsRetentionHasPassedOnPostgresql() throws Exception {
        String event = app.newEvent("A1");
        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
        assertThat(answer.status()).as(answer.toString()).isEqualTo(201);
        String key = Outbox.dedupeKey(answer.json().path("id").asText(), "confirmation-email");
        TestClock clock = new TestClock();
        clock.catchUp();
        Database db = app.services().db();
        OutboxConfig config = new OutboxConfig(Duration.ofMillis(50), 50, "/emails", "/refunds", Duration.ofSeconds(2),
                                               Duration.ofSeconds(1), Duration.ofMinutes(5), 3, Duration.ofHours(24), 4,
                                               Duration.ofHours(1), 500);
        try (OutboxWorker worker = new OutboxWorker(db, OutboxWorkerTest.http("http://127.0.0.1:" + app.testApp().stubs.port()),
                                                    config, clock)) {
            OutboxWorker.Pass sending = worker.pass();
            String stateAfterSending = OutboxQuery.find(db, key).orElseThrow().state();
            clock.advance(Duration.ofHours(2));
            OutboxWorker.Pass pruning = worker.pass();

            assertThat(sending.sent()).isPositive();
            assertThat(stateAfterSending).isEqualTo("SENT");
            assertThat(pruning.pruned()).isEqualTo(sending.sent());
            assertThat(OutboxQuery.find(db, key)).isEmpty();
        }
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }
}
