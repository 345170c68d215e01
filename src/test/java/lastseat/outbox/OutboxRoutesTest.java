package lastseat.outbox;

import com.fasterxml.jackson.databind.JsonNode;
import io.helidon.webserver.WebServer;
import lastseat.config.DbConfig;
import lastseat.config.OutboxConfig;
import lastseat.config.OutsideConfig;
import lastseat.db.Database;
import lastseat.db.Sql;
import lastseat.outside.OutsideHttp;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.Together;
import lastseat.web.Edge;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.URI;
import lastseat.testkit.Instance;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code GET /outbox?state=…} and {@code POST /outbox/{id}/retry} on a routing of their own: what an
 * operator sees of dead, pending and sent rows, a 400 problem for anything else, and a dead refund
 * — money owed to a buyer — queued again by an operator's hand, once.
 */
class OutboxRoutesTest {
    private static Database db;
    private static WebServer server;
    private static LastseatClient client;

    @BeforeAll
    static void start() {
        db = Database.open(new DbConfig("jdbc:h2:mem:outbox-routes-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1", "sa", "", 4,
                                        Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(1), 16));
        server = WebServer.builder()
                .host("127.0.0.1")
                .port(0)
                .routing(routing -> {
                    routing.register("/outbox", new OutboxRoutes(db, worker()));
                    new Edge(Duration.ofSeconds(1)).errors(routing);
                })
                .build()
                .start();
        URI uri = URI.create("http://127.0.0.1:" + server.port());
        // A routing of its own, without the access filter: any key, or none, is let through.
        client = new LastseatClient(new Instance(uri, uri, Instance.DEMO_OPERATOR_KEY, Instance.DEMO_CLIENT_KEY));
    }

    @AfterAll
    static void stop() {
        server.stop();
        db.close();
    }

    @BeforeEach
    void emptyOutbox() {
        db.inTransaction(c -> Sql.update(c, "DELETE FROM outbox"));
    }

    @Test
    void deadRowsAreListedWithTheirKeyAttemptsAndErrorButNoPayload() throws Exception {
        Instant written = Instant.now().truncatedTo(ChronoUnit.MILLIS);
        String purchase = UUID.randomUUID().toString();
        queue(purchase, "confirmation-email", written);
        queue(UUID.randomUUID().toString(), "confirmation-email", written);
        db.inTransaction(c -> Sql.update(c, "UPDATE outbox SET state = 'DEAD', attempts = 20, last_error = 'gave up' "
                                            + "WHERE purchase_id = ?", purchase));

        Answer answer = client.get("/outbox?state=dead");

        assertThat(answer.status()).isEqualTo(200);
        assertThat(answer.header("Content-Type")).isEqualTo("application/json");
        JsonNode body = answer.json();
        assertThat(body.path("state").asText()).isEqualTo("DEAD");
        assertThat(body.path("count").asInt()).isEqualTo(1);
        assertThat(body.path("limit").asInt()).isEqualTo(100);
        assertThat(body.path("items")).hasSize(1);
        JsonNode item = body.path("items").get(0);
        assertThat(item.path("purchaseId").asText()).isEqualTo(purchase);
        assertThat(item.path("kind").asText()).isEqualTo("confirmation-email");
        assertThat(item.path("idempotencyKey").asText()).isEqualTo(purchase + ":confirmation-email");
        assertThat(item.path("attempts").asInt()).isEqualTo(20);
        assertThat(item.path("lastError").asText()).isEqualTo("gave up");
        assertThat(item.path("createdAt").asText()).isEqualTo(written.toString());
        assertThat(item.path("nextAttemptAt").isNull()).as("a DEAD row is never attempted again").isTrue();
        assertThat(item.path("sentAt").isNull()).isTrue();
        assertThat(item.has("payload")).as("the payload carries the buyer's address").isFalse();
        assertThat(db.activeConnections()).isZero();
    }

    @Test
    void theCountIsTheWholeStateWhileTheItemsStopAtTheLimit() throws Exception {
        Instant written = Instant.now().truncatedTo(ChronoUnit.MILLIS);
        for (int i = 0; i < 105; i++) {
            queue(UUID.randomUUID().toString(), "confirmation-email", written.plusMillis(i));
        }

        JsonNode body = client.outbox("PENDING");

        assertThat(body.path("state").asText()).isEqualTo("PENDING");
        assertThat(body.path("count").asInt()).isEqualTo(105);
        assertThat(body.path("items")).hasSize(100);
        assertThat(body.path("items").get(0).path("nextAttemptAt").asText()).as("next due first").isEqualTo(written.toString());
        assertThat(db.activeConnections()).isZero();
    }

    @Test
    void everyDeadRefundCanBeFoundHoweverManyEmailsDiedAfterIt() throws Exception {
        Instant written = Instant.now().truncatedTo(ChronoUnit.MILLIS);
        String refunded = UUID.randomUUID().toString();
        queue(refunded, "refund", written);
        for (int i = 1; i <= 150; i++) {
            queue(UUID.randomUUID().toString(), "confirmation-email", written.plusMillis(i));
        }
        db.inTransaction(c -> Sql.update(c, "UPDATE outbox SET state = 'DEAD'"));

        JsonNode newest = client.outbox("dead");
        JsonNode refunds = client.get("/outbox?state=dead&kind=refund").json();
        JsonNode lastPage = client.get("/outbox?state=dead&offset=100").json();

        assertThat(newest.path("count").asInt()).isEqualTo(151);
        assertThat(newest.path("items").findValuesAsText("purchaseId")).as("the newest 100 are emails").doesNotContain(refunded);
        assertThat(refunds.path("kind").asText()).isEqualTo("refund");
        assertThat(refunds.path("count").asInt()).isEqualTo(1);
        assertThat(refunds.path("items").findValuesAsText("purchaseId")).containsExactly(refunded);
        assertThat(lastPage.path("offset").asInt()).isEqualTo(100);
        assertThat(lastPage.path("items")).hasSize(51);
        assertThat(lastPage.path("items").findValuesAsText("purchaseId")).as("paging reaches the oldest").endsWith(refunded);
        assertThat(db.activeConnections()).isZero();
    }

    @Test
    void anUnknownKindOrABadOffsetIsABadRequestProblemAndListsNothing() throws Exception {
        for (String query : List.of("kind=gift", "kind=", "offset=-1", "offset=x", "offset=99999999", "offset=1000001")) {
            Answer answer = client.get("/outbox?state=dead&" + query);

            assertThat(answer.status()).as(query).isEqualTo(400);
            assertThat(answer.json().path("type").asText()).as(query).isEqualTo("urn:lastseat:problem:invalid-parameter");
        }
        assertThat(db.activeConnections()).isZero();
    }

    @Test
    void anUnknownOrMissingStateIsABadRequestProblem() throws Exception {
        Answer unknown = client.get("/outbox?state=lost");
        Answer missing = client.get("/outbox");

        assertThat(unknown.status()).isEqualTo(400);
        assertThat(unknown.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(unknown.json().path("type").asText()).isEqualTo("urn:lastseat:problem:invalid-parameter");
        assertThat(unknown.json().path("detail").asText()).contains("'lost'");
        assertThat(missing.status()).isEqualTo(400);
        assertThat(missing.json().path("type").asText()).isEqualTo("urn:lastseat:problem:missing-parameter");
        assertThat(db.activeConnections()).isZero();
    }

    @Test
    void aDeadRefundIsQueuedAgainByAnOperatorOnceWithItsKeyAndFreshAttempts() throws Exception {
        String purchase = UUID.randomUUID().toString();
        queue(purchase, "refund", Instant.now().minus(Duration.ofDays(2)));
        db.inTransaction(c -> Sql.update(c, "UPDATE outbox SET state = 'DEAD', attempts = 20, last_error = 'HTTP 400' "
                                            + "WHERE purchase_id = ?", purchase));
        String id = client.outbox("dead").path("items").get(0).path("id").asText();
        assertThat(OutboxQuery.deadRefunds(db)).as("counted for the gauge lastseat_refunds_dead").isEqualTo(1.0);

        List<Answer> retries = Together.run(2, i -> client.retryOutbox(id));

        assertThat(retries).extracting(Answer::status).as("two operators at once: one queues it")
                .containsExactlyInAnyOrder(200, 409);
        JsonNode queued = retries.stream().filter(r -> r.status() == 200).findFirst().orElseThrow().json();
        assertThat(queued.path("idempotencyKey").asText()).isEqualTo(purchase + ":refund");
        assertThat(queued.path("attempts").asInt()).isZero();
        assertThat(queued.path("lastError").asText()).startsWith("retried by an operator after: HTTP 400");
        assertThat(OutboxQuery.deadRefunds(db)).isZero();
        assertThat(db.read(c -> Sql.list(c, "SELECT COUNT(*) FROM outbox WHERE state = 'PENDING' AND retried_at IS NOT NULL "
                                            + "AND next_attempt_at <= ?", rs -> rs.getInt(1),
                                         Instant.now().atOffset(java.time.ZoneOffset.UTC))).getFirst())
                .as("due now, its give-up time counted from the retry").isEqualTo(1);
        assertThat(db.activeConnections()).isZero();
    }

    @Test
    void retryingARowThatIsNotDeadOrDoesNotExistChangesNothing() throws Exception {
        String purchase = UUID.randomUUID().toString();
        queue(purchase, "refund", Instant.now());
        String id = client.outbox("pending").path("items").get(0).path("id").asText();

        Answer pending = client.retryOutbox(id);
        Answer unknown = client.retryOutbox(UUID.randomUUID().toString());

        assertThat(pending.status()).isEqualTo(409);
        assertThat(pending.json().path("type").asText()).isEqualTo("urn:lastseat:problem:outbox-row-not-dead");
        assertThat(pending.json().path("state").asText()).isEqualTo("PENDING");
        assertThat(unknown.status()).isEqualTo(404);
        assertThat(db.read(c -> Sql.list(c, "SELECT attempts FROM outbox WHERE id = ?", rs -> rs.getInt(1), id)).getFirst()).isZero();
        assertThat(db.activeConnections()).isZero();
    }

    private static OutboxWorker worker() {
        // Nothing is delivered here: the receiver's address is never called.
        return new OutboxWorker(db, new OutsideHttp(new OutsideConfig("http://127.0.0.1:9", Duration.ofMillis(500),
                                                                       Duration.ofSeconds(1), Duration.ofMillis(100), 65536,
                                                                       Duration.ofMinutes(10), 32)),
                                new OutboxConfig(Duration.ofSeconds(1), 50, "/emails", "/refunds", Duration.ofSeconds(1),
                                                 Duration.ofSeconds(1), Duration.ofMinutes(1), 20, Duration.ofDays(1),
                                                 16, Duration.ofDays(7), 500),
                                Clock.systemUTC());
    }

    private static void queue(String purchase, String kind, Instant at) {
        db.inTransaction(c -> {
            Outbox.add(c, kind, purchase, "{\"to\":\"ada@example.com\"}", at);
            return null;
        });
    }
}
