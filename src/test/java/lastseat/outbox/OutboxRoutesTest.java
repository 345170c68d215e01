package lastseat.outbox;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.helidon.webserver.WebServer;
import lastseat.db.Database;
import lastseat.db.DbConfig;
import lastseat.db.Sql;
import lastseat.web.Problem;
import lastseat.web.Reply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code GET /outbox?state=…} on a routing of its own (until Services registers it with the app's
 * routes): what an operator sees of dead, pending and sent rows, and a 400 problem for anything else.
 */
class OutboxRoutesTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient CLIENT = HttpClient.newHttpClient();

    private static Database db;
    private static WebServer server;

    @BeforeAll
    static void start() {
        db = Database.open(new DbConfig("jdbc:h2:mem:outbox-routes-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1", "sa", "", 4,
                                        Duration.ofSeconds(2), Duration.ofSeconds(2)));
        server = WebServer.builder()
                .host("127.0.0.1")
                .port(0)
                .routing(routing -> {
                    new OutboxRoutes(db).register(routing);
                    routing.error(Problem.class, (request, response, problem) ->
                            Reply.problem(problem, request.path().path()).send(response));
                })
                .build()
                .start();
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

        HttpResponse<String> answer = get("/outbox?state=dead");

        assertThat(answer.statusCode()).isEqualTo(200);
        assertThat(answer.headers().firstValue("Content-Type")).hasValue("application/json");
        JsonNode body = JSON.readTree(answer.body());
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

        JsonNode body = JSON.readTree(get("/outbox?state=PENDING").body());

        assertThat(body.path("state").asText()).isEqualTo("PENDING");
        assertThat(body.path("count").asInt()).isEqualTo(105);
        assertThat(body.path("items")).hasSize(100);
        assertThat(body.path("items").get(0).path("nextAttemptAt").asText()).as("next due first").isEqualTo(written.toString());
        assertThat(db.activeConnections()).isZero();
    }

    @Test
    void anUnknownOrMissingStateIsABadRequestProblem() throws Exception {
        HttpResponse<String> unknown = get("/outbox?state=lost");
        HttpResponse<String> missing = get("/outbox");

        assertThat(unknown.statusCode()).isEqualTo(400);
        assertThat(unknown.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(JSON.readTree(unknown.body()).path("type").asText()).isEqualTo("urn:lastseat:problem:invalid-parameter");
        assertThat(JSON.readTree(unknown.body()).path("detail").asText()).contains("'lost'");
        assertThat(missing.statusCode()).isEqualTo(400);
        assertThat(JSON.readTree(missing.body()).path("type").asText()).isEqualTo("urn:lastseat:problem:missing-parameter");
        assertThat(db.activeConnections()).isZero();
    }

    private static void queue(String purchase, String kind, Instant at) {
        db.inTransaction(c -> {
            Outbox.add(c, kind, purchase, "{\"to\":\"ada@example.com\"}", at);
            return null;
        });
    }

    private static HttpResponse<String> get(String path) throws Exception {
        return CLIENT.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                                   .timeout(Duration.ofSeconds(10)).GET().build(),
                           HttpResponse.BodyHandlers.ofString());
    }
}
