package lastseat.web;

import lastseat.support.HeldConnection;
import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder;
import com.github.tomakehurst.wiremock.http.Fault;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.testing.junit5.ServerTest;
import io.helidon.webserver.testing.junit5.SetUpRoute;
import lastseat.Main;
import lastseat.db.Sql;
import lastseat.support.Invariants;
import lastseat.support.Leaks;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Instance;
import lastseat.testkit.LastseatClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * No answer tells a caller how the server is built. Every kind of problem the service answers — bad
 * JSON of every shape, wrong types, absurd numbers, the HTTP layer's own refusals, a busy database, an
 * unexpected failure — and every timeline and reason a failing outside service leaves on a purchase, and
 * the health check, say what happened in sentences of their own: never an exception's class or message,
 * SQL, a database's or the JSON library's words ({@link Leaks#DENIED}). The log keeps those.
 *
 * <p>Runs on an app of its own with a pool of 3 connections and a 300 ms wait for one, so that the
 * database can be made busy; the unexpected failures come from routes added to a {@code @ServerTest}
 * server in front of the same error handling.
 */
@ServerTest
class NoLeaksTest {
    @RegisterExtension
    static final LastseatApp APP = LastseatApp.with(Map.of("db.pool-size", "3", "db.connection-timeout", "300ms"));

    private final LastseatClient routed;
    private final URI routedUri;

    NoLeaksTest(URI uri) {
        this.routedUri = uri;
        this.routed = new LastseatClient(new Instance(uri, uri, Instance.DEMO_OPERATOR_KEY, Instance.DEMO_CLIENT_KEY));
    }

    /** The service's routing, with two routes that fail as nothing in it should: a bad statement and a runtime failure. */
    @SetUpRoute
    static void routing(HttpRouting.Builder routing) {
        routing.get("/boom/statement", (request, response) -> APP.services().db().read(
                       c -> Sql.list(c, "SELECT no_such_column FROM no_such_table", rs -> 1)))
               .get("/boom/runtime", (request, response) -> {
                   throw new IllegalStateException("java.lang.IllegalStateException in lastseat.Main: SQL SELECT * FROM purchases");
               });
        Main.routing(routing, APP.services());
    }

    private static final String OK_BUYER = "\"buyer\":{\"id\":\"ada\",\"email\":\"ada@example.com\"},\"paymentToken\":\"tok_ok\"";

    static Stream<Arguments> badPurchaseBodies() {
        String event = "\"eventId\":\"demo-event\",";
        byte[] random = new byte[300];
        new Random(12).nextBytes(random);
        return Stream.of(
                body("cut short", "{\"eventId\":"),
                body("a trailing comma", "{\"eventId\":\"x\",}"),
                body("single quotes", "{'eventId':'x'}"),
                body("a comment", "{/* hi */\"eventId\":\"x\"}"),
                body("two objects", "{\"eventId\":\"x\"} {\"eventId\":\"y\"}"),
                body("a list", "[1,2]"),
                body("a string", "\"just text\""),
                body("a number", "42"),
                body("null", "null"),
                body("true", "true"),
                body("NaN", "{" + event + "\"quantity\":NaN," + OK_BUYER + "}"),
                body("a leading zero", "{" + event + "\"quantity\":01," + OK_BUYER + "}"),
                body("quantity as text", "{" + event + "\"quantity\":\"2\"," + OK_BUYER + "}"),
                body("quantity as a fraction", "{" + event + "\"quantity\":2.5," + OK_BUYER + "}"),
                body("quantity as a boolean", "{" + event + "\"quantity\":true," + OK_BUYER + "}"),
                body("quantity as a list", "{" + event + "\"quantity\":[1]," + OK_BUYER + "}"),
                body("quantity as an object", "{" + event + "\"quantity\":{}," + OK_BUYER + "}"),
                body("quantity past an int", "{" + event + "\"quantity\":99999999999," + OK_BUYER + "}"),
                body("quantity past a long", "{" + event + "\"quantity\":99999999999999999999999," + OK_BUYER + "}"),
                body("quantity with 50 digits", "{" + event + "\"quantity\":" + "9".repeat(50) + "," + OK_BUYER + "}"),
                body("quantity 1e400", "{" + event + "\"quantity\":1e400," + OK_BUYER + "}"),
                body("a negative quantity", "{" + event + "\"quantity\":-2147483648," + OK_BUYER + "}"),
                body("seats as text", "{" + event + "\"seats\":\"A1\"," + OK_BUYER + "}"),
                body("seats as an object", "{" + event + "\"seats\":{\"A1\":1}," + OK_BUYER + "}"),
                body("a list in the seats", "{" + event + "\"seats\":[[\"A1\"]]," + OK_BUYER + "}"),
                body("a null seat", "{" + event + "\"seats\":[null]," + OK_BUYER + "}"),
                body("buyer as text", "{" + event + "\"quantity\":1,\"buyer\":\"ada\",\"paymentToken\":\"tok_ok\"}"),
                body("buyer as a list", "{" + event + "\"quantity\":1,\"buyer\":[],\"paymentToken\":\"tok_ok\"}"),
                body("buyer.id as an object", "{" + event + "\"quantity\":1,\"buyer\":{\"id\":{},\"email\":\"a@example.com\"},\"paymentToken\":\"t\"}"),
                body("eventId as a list", "{\"eventId\":[],\"quantity\":1," + OK_BUYER + "}"),
                body("an unknown field", "{" + event + "\"quantity\":1," + OK_BUYER + ",\"discount\":100}"),
                body("an unknown nested field", "{" + event + "\"quantity\":1,\"buyer\":{\"id\":\"a\",\"email\":\"a@example.com\",\"age\":3},\"paymentToken\":\"t\"}"),
                body("an unknown field named like a class", "{" + event + "\"quantity\":1," + OK_BUYER + ",\"java.lang.Exception\":1}"),
                body("a field given twice", "{" + event + "\"eventId\":\"other\",\"quantity\":1," + OK_BUYER + "}"),
                body("deep nesting", "{\"eventId\":" + "[".repeat(100) + "]".repeat(100) + "}"),
                body("a string of 12000 characters", "{\"eventId\":\"" + "e".repeat(12_000) + "\"}"),
                body("a bad escape", "{\"eventId\":\"\\uZZZZ\"}"),
                body("a NUL in the eventId", "{\"eventId\":\"x\\u0000\",\"quantity\":1," + OK_BUYER + "}"),
                Arguments.of("bytes that are not UTF-8", new byte[] {'{', '"', 'e', '"', ':', '"', (byte) 0xC3, 0x28, '"', '}'}),
                Arguments.of("an overlong NUL", new byte[] {'{', '"', 'e', 'v', 'e', 'n', 't', 'I', 'd', '"', ':', '"', (byte) 0xC0, (byte) 0x80, '"', '}'}),
                Arguments.of("random bytes", random));
    }

    private static Arguments body(String what, String json) {
        return Arguments.of(what, json.getBytes(StandardCharsets.UTF_8));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badPurchaseBodies")
    void aBadPurchaseBodyIsRefusedInWordsOfTheServersOwn(String what, byte[] body) {
        Answer answer = APP.client().post("/purchases", Map.of("Content-Type", "application/json",
                                                               "Idempotency-Key", UUID.randomUUID().toString()), body);

        assertThat(answer.status()).as("%s: %s", what, answer).isEqualTo(400);
        Leaks.cleanProblem(what, answer);
    }

    static Stream<Arguments> badEventBodies() {
        String rest = "\"price\":\"1.00\",\"currency\":\"EUR\"";
        return Stream.of(
                body("capacity as text", "{\"name\":\"x\",\"capacity\":\"5\"," + rest + "}"),
                body("capacity as a fraction", "{\"name\":\"x\",\"capacity\":5.5," + rest + "}"),
                body("capacity past an int", "{\"name\":\"x\",\"capacity\":1e10," + rest + "}"),
                body("a price that is no number", "{\"name\":\"x\",\"capacity\":2,\"price\":\"forty\",\"currency\":\"EUR\"}"),
                body("a price as a list", "{\"name\":\"x\",\"capacity\":2,\"price\":[1],\"currency\":\"EUR\"}"),
                body("a price of 1e999999999", "{\"name\":\"x\",\"capacity\":2,\"price\":1e999999999,\"currency\":\"EUR\"}"),
                body("a price of 1e-999999999", "{\"name\":\"x\",\"capacity\":2,\"price\":\"1e-999999999\",\"currency\":\"EUR\"}"),
                body("a price with an exponent past an int", "{\"name\":\"x\",\"capacity\":2,\"price\":\"1e-2147483649\",\"currency\":\"EUR\"}"),
                body("seats as an object", "{\"name\":\"x\",\"seats\":{}," + rest + "}"),
                body("a name of 12000 characters", "{\"name\":\"" + "n".repeat(12_000) + "\",\"capacity\":2," + rest + "}"),
                body("a NUL in the name", "{\"name\":\"x\\u0000\",\"capacity\":2," + rest + "}"),
                body("an unknown field", "{\"name\":\"x\",\"capacity\":2," + rest + ",\"vip\":true}"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badEventBodies")
    void aBadEventBodyIsRefusedInWordsOfTheServersOwn(String what, byte[] body) {
        long events = APP.db().count("SELECT COUNT(*) FROM events");

        Answer answer = APP.client().post("/events", Map.of("Content-Type", "application/json"), body);

        assertThat(answer.status()).as("%s: %s", what, answer).isEqualTo(400);
        Leaks.cleanProblem(what, answer);
        assertThat(APP.db().count("SELECT COUNT(*) FROM events")).isEqualTo(events);
    }

    @Test
    void theRefusalsAroundTheBodyAreCleanToo() {
        String key = UUID.randomUUID().toString();
        byte[] json = ("{\"eventId\":\"x\",\"quantity\":1," + OK_BUYER + "}").getBytes(StandardCharsets.UTF_8);
        LastseatClient client = APP.client();
        URI api = client.base();
        Map<String, Answer> answers = new java.util.LinkedHashMap<>();
        answers.put("an unknown route", client.send("GET", api, "/nowhere", Instance.DEMO_OPERATOR_KEY, null, null));
        answers.put("a route the client may not use", client.get("/nowhere"));
        answers.put("an unknown purchase", client.get("/purchases/" + UUID.randomUUID()));
        answers.put("an unknown event", client.get("/events/no-such-event"));
        answers.put("a NUL in a path", client.get("/events/x%00y"));
        answers.put("an unknown state", client.get("/purchases?state=NOPE"));
        answers.put("no state", client.get("/purchases"));
        answers.put("no key", client.send("GET", api, "/purchases?state=HELD", null, null, null));
        answers.put("a key that is not one", client.send("GET", api, "/purchases?state=HELD", "java.lang.Exception", null, null));
        answers.put("the wrong role", client.send("DELETE", api, "/purchases", Instance.DEMO_CLIENT_KEY, null, null));
        answers.put("a text body", client.post("/purchases", Map.of("Content-Type", "text/plain", "Idempotency-Key", key), json));
        answers.put("no Idempotency-Key", client.post("/purchases", Map.of("Content-Type", "application/json"), json));
        answers.put("a bad Idempotency-Key", client.post("/purchases", Map.of("Content-Type", "application/json",
                                                                              "Idempotency-Key", "a b"), json));
        answers.put("a body over the route's limit", client.post("/purchases", Map.of("Content-Type", "application/json",
                                                                                      "Idempotency-Key", key), new byte[20_000]));
        answers.put("an empty body", client.post("/purchases", Map.of("Content-Type", "application/json", "Idempotency-Key", key),
                                                 new byte[0]));
        answers.put("a bad admin body", client.post("/admin/clients", Map.of("Content-Type", "application/json"),
                                                    "{\"name\":".getBytes(StandardCharsets.UTF_8)));

        answers.forEach((what, answer) -> {
            assertThat(answer.status()).as("%s: %s", what, answer).isBetween(400, 499);
            Leaks.cleanProblem(what, answer);
        });
        Invariants.resourcesCameBack(APP);
    }

    static Stream<Arguments> brokenHttp() {
        return Stream.of(
                Arguments.of("a request line that is not HTTP", "GARBAGE\r\n\r\n"),
                Arguments.of("a header without a colon", "GET /events/x HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n"),
                Arguments.of("a header too large", "GET /events/x HTTP/1.1\r\nHost: x\r\nX-Big: " + "a".repeat(20_000) + "\r\n\r\n"),
                Arguments.of("a path too long", "GET /events/" + "a".repeat(20_000) + " HTTP/1.1\r\nHost: x\r\n\r\n"),
                Arguments.of("a length past the server's limit", "POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                                                  + "Content-Length: 3000000\r\n\r\n{"),
                Arguments.of("a length that is no number", "POST /events HTTP/1.1\r\nHost: x\r\nContent-Length: java.lang\r\n\r\n{}"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("brokenHttp")
    void httpThatCannotBeReadIsRefusedInWordsOfTheServersOwn(String what, String request) throws IOException {
        RawAnswer answer = raw(APP.client().base(), request);

        assertThat(answer.status()).as("%s: %s", what, answer).isBetween(400, 499);
        Leaks.none(what, answer.body());
        if (answer.contentType() != null && answer.contentType().startsWith("application/problem+json")) {
            Leaks.sentence(what, com.fasterxml.jackson.databind.json.JsonMapper.builder().build().readTree(answer.body())
                    .path("detail").asText(null));
        }
    }

    @Test
    void anUnexpectedFailureIsA500ThatSaysOnlyWhatTheCallerMayRelyOn() {
        for (String route : List.of("/boom/statement", "/boom/runtime")) {
            Answer answer = routed.send("GET", routedUri, route, Instance.DEMO_OPERATOR_KEY, null, null);

            assertThat(answer.status()).as("%s: %s", route, answer).isEqualTo(500);
            assertThat(Leaks.cleanProblem(route, answer).path("type").asText()).isEqualTo("urn:lastseat:problem:internal");
        }
        Invariants.resourcesCameBack(APP);
    }

    @Test
    void aBusyDatabaseIsAnsweredAsBusyAndTheHealthCheckSaysSoInWords() throws Exception {
        String event = APP.newEvent("A1");
        CountDownLatch taken = new CountDownLatch(3);
        CountDownLatch letGo = new CountDownLatch(1);
        Answer purchase;
        Answer health;
        try (ExecutorService holders = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 3; i++) {
                holders.submit(() -> HeldConnection.hold(APP.services().db(), taken, letGo));
            }
            assertThat(taken.await(10, TimeUnit.SECONDS)).as("every connection taken").isTrue();

            purchase = APP.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
            health = APP.client().health();
            letGo.countDown();
        }

        assertThat(purchase.status()).as(purchase.toString()).isEqualTo(503);
        assertThat(Leaks.cleanProblem("a purchase on a busy database", purchase).path("type").asText())
                .isEqualTo("urn:lastseat:problem:database-busy");
        assertThat(health.status()).as(health.toString()).isEqualTo(503);
        Leaks.none("the health check of a busy database", health.body());
        JsonNode database = health.json().path("checks").get(0);
        assertThat(database.path("status").asText()).isEqualTo("DOWN");
        assertThat(database.path("data").path("error").asText()).as("the pool's own words stay in the log")
                .isEqualTo("the database is busy: no connection came free within db.connection-timeout");
        assertThat(APP.client().health().status()).as("up again").isEqualTo(200);
        Invariants.resourcesCameBack(APP);
    }

    static Stream<Arguments> outsideFailures() {
        return Stream.of(
                failure("fraud resets", "/fraud/checks", aResponse().withFault(Fault.CONNECTION_RESET_BY_PEER), 503),
                failure("fraud answers garbage and closes", "/fraud/checks", aResponse().withFault(Fault.RANDOM_DATA_THEN_CLOSE), 503),
                failure("fraud answers a stack trace", "/fraud/checks", aResponse().withStatus(500)
                        .withBody("org.postgresql.util.PSQLException: ERROR: relation \"x\" does not exist\n\tat java.base/x"), 503),
                failure("fraud answers no JSON", "/fraud/checks", aResponse().withStatus(200).withBody("<html>NullPointerException</html>"), 503),
                failure("fraud declines with a NUL in its reason", "/fraud/checks", aResponse().withStatus(200)
                        .withBody("{\"decision\":\"decline\",\"reason\":\"risky\\u0000 buyer\\n\"}"), 403),
                failure("tax answers nothing", "/tax/quotes", aResponse().withFault(Fault.EMPTY_RESPONSE), 503),
                failure("tax quotes in a currency named like a class", "/tax/quotes", aResponse().withStatus(200)
                        .withBody("{\"tax\":\"1.00\",\"currency\":\"java.lang.Exception\"}"), 503),
                failure("payment resets", "/payments", aResponse().withFault(Fault.CONNECTION_RESET_BY_PEER), 202),
                failure("payment breaks its answer", "/payments", aResponse().withFault(Fault.MALFORMED_RESPONSE_CHUNK), 202),
                failure("payment answers a stack trace", "/payments", aResponse().withStatus(500)
                        .withBody("java.sql.SQLException: deadlock\n\tat org.h2.Driver"), 202),
                failure("payment answers a status named like a class", "/payments", aResponse().withStatus(201)
                        .withBody("{\"id\":\"pay_1\",\"status\":\"java.lang.Exception\"}"), 202),
                failure("payment answers no JSON", "/payments", aResponse().withStatus(201).withBody("<html>SQL Exception</html>"), 202),
                failure("payment refuses with a stack trace", "/payments", aResponse().withStatus(400)
                        .withBody("com.fasterxml.jackson.core.JsonParseException: Unrecognized token"), 502));
    }

    private static Arguments failure(String what, String path, ResponseDefinitionBuilder response, int status) {
        return Arguments.of(what, path, response, status);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("outsideFailures")
    void anOutsideServiceThatFailsLeavesAnAnswerAndATimelineInWords(String what, String path, ResponseDefinitionBuilder failing,
                                                                    int status) {
        APP.stubs().stubFor(post(urlPathEqualTo(path)).atPriority(1).willReturn(failing));
        String event = APP.newEvent("A1");
        String key = UUID.randomUUID().toString();

        Answer answer = APP.client().purchaseSeats(key, event, "A1");

        assertThat(answer.status()).as("%s: %s", what, answer).isEqualTo(status);
        if (status >= 400) {
            Leaks.cleanProblem(what, answer);
        } else {
            Leaks.none(what, answer.body());
        }
        String id = APP.db().strings("SELECT id FROM purchases WHERE idempotency_key = ?", key).getFirst();
        Leaks.cleanPurchase(what, APP.client().purchaseView(id));
        for (String stored : APP.db().strings("SELECT outcome FROM purchase_steps WHERE purchase_id = ? "
                                              + "UNION ALL SELECT reason FROM purchases WHERE id = ?", id, id)) {
            Leaks.none(what + ": what is stored", stored);
        }
        Invariants.resourcesCameBack(APP);
    }

    @AfterEach
    void connectionsCameBack() {
        Invariants.resourcesCameBack(APP);
    }

    /** An answer read off a socket: what a client that speaks broken HTTP gets. */
    private record RawAnswer(int status, String contentType, String body) {
    }

    private static RawAnswer raw(URI server, String request) throws IOException {
        try (Socket socket = new Socket(server.getHost(), server.getPort())) {
            socket.setSoTimeout(5_000);
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
                int b = in.read();
                if (b < 0) {
                    break;
                }
                head.write(b);
            }
            String[] lines = head.toString(StandardCharsets.ISO_8859_1).split("\r\n");
            int status = Integer.parseInt(lines[0].split(" ")[1]);
            String contentType = null;
            int length = -1;
            for (String line : lines) {
                String lower = line.toLowerCase(java.util.Locale.ROOT);
                if (lower.startsWith("content-type:")) {
                    contentType = line.substring(13).trim();
                } else if (lower.startsWith("content-length:")) {
                    length = Integer.parseInt(line.substring(15).trim());
                }
            }
            byte[] body = length >= 0 ? in.readNBytes(length) : new byte[0];
            return new RawAnswer(status, contentType, new String(body, StandardCharsets.UTF_8));
        }
    }
}
