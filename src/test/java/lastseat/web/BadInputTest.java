package lastseat.web;

import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.testing.junit5.ServerTest;
import io.helidon.webserver.testing.junit5.SetUpRoute;
import lastseat.Main;
import lastseat.support.Invariants;
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

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Bad input gets a clear problem and changes nothing: no purchase, no key, no seat, no outside call.
 * Runs on a server built by {@code @ServerTest} from {@link Main#routing}, over the shared services;
 * the bodies go out as the raw bytes a careless or hostile client sends, through the typed client's raw post.
 */
@ServerTest
class BadInputTest {
    // @ServerTest builds its routing before this extension's callbacks run: APP starts on that first use.
    @RegisterExtension
    static final LastseatApp APP = LastseatApp.shared();

    private static final String EVENT = APP.newEvent("A1", "A2", "A3", "A4", "A5");

    private final LastseatClient client;

    BadInputTest(URI uri) {
        this.client = new LastseatClient(new Instance(uri, uri, Instance.DEMO_OPERATOR_KEY, Instance.DEMO_CLIENT_KEY));
    }

    @SetUpRoute
    static void routing(HttpRouting.Builder routing) {
        Main.routing(routing, APP.services());
    }

    static Stream<Arguments> badPurchases() {
        String ok = "\"buyer\":{\"id\":\"ada\",\"email\":\"ada@example.com\"},\"paymentToken\":\"tok_ok\"";
        return Stream.of(
                Arguments.of("malformed JSON", "{\"eventId\":", 400, "malformed-json"),
                Arguments.of("not an object", "[1,2]", 400, "malformed-json"),
                Arguments.of("empty body", "", 400, "malformed-json"),
                Arguments.of("unknown field", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\"]," + ok + ",\"discount\":100}", 400, "unknown-field"),
                Arguments.of("unknown event", "{\"eventId\":\"no-such-event\",\"seats\":[\"A1\"]," + ok + "}", 404, "unknown-event"),
                Arguments.of("unknown seat", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"Z9\"]," + ok + "}", 400, "unknown-seats"),
                Arguments.of("empty seat list", "{\"eventId\":\"" + EVENT + "\",\"seats\":[]," + ok + "}", 400, "invalid-field"),
                Arguments.of("seat listed twice", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\",\"A1\"]," + ok + "}", 400, "invalid-field"),
                Arguments.of("seats and quantity", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\"],\"quantity\":1," + ok + "}", 400, "invalid-field"),
                Arguments.of("quantity 0", "{\"eventId\":\"" + EVENT + "\",\"quantity\":0," + ok + "}", 400, "invalid-quantity"),
                Arguments.of("negative quantity", "{\"eventId\":\"" + EVENT + "\",\"quantity\":-3," + ok + "}", 400, "invalid-quantity"),
                Arguments.of("quantity over capacity", "{\"eventId\":\"" + EVENT + "\",\"quantity\":6," + ok + "}", 400, "invalid-quantity"),
                Arguments.of("absurd quantity", "{\"eventId\":\"" + EVENT + "\",\"quantity\":99999999999," + ok + "}", 400, "malformed-json"),
                Arguments.of("quantity as text", "{\"eventId\":\"" + EVENT + "\",\"quantity\":\"2\"," + ok + "}", 400, "malformed-json"),
                Arguments.of("no buyer", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\"],\"paymentToken\":\"tok_ok\"}", 400, "invalid-field"),
                Arguments.of("bad email", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\"],\"buyer\":{\"id\":\"a\",\"email\":\"nope\"},\"paymentToken\":\"t\"}", 400, "invalid-field"),
                Arguments.of("NUL in eventId", "{\"eventId\":\"" + EVENT + "\\u0000\",\"seats\":[\"A1\"]," + ok + "}", 400, "invalid-field"),
                Arguments.of("NUL in a seat label", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\\u0000\"]," + ok + "}", 400, "invalid-field"),
                Arguments.of("NUL in buyer.id", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\"],\"buyer\":{\"id\":\"a\\u0000\",\"email\":\"a@example.com\"},\"paymentToken\":\"tok_ok\"}", 400, "invalid-field"),
                Arguments.of("NUL in buyer.email", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\"],\"buyer\":{\"id\":\"a\",\"email\":\"a\\u0000@example.com\"},\"paymentToken\":\"tok_ok\"}", 400, "invalid-field"),
                Arguments.of("line break in buyer.id", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\"],\"buyer\":{\"id\":\"a\\nb\",\"email\":\"a@example.com\"},\"paymentToken\":\"tok_ok\"}", 400, "invalid-field"),
                Arguments.of("unpaired surrogate in buyer.id", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\"],\"buyer\":{\"id\":\"a\\ud800\",\"email\":\"a@example.com\"},\"paymentToken\":\"tok_ok\"}", 400, "invalid-field"),
                Arguments.of("NUL in paymentToken", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\"],\"buyer\":{\"id\":\"a\",\"email\":\"a@example.com\"},\"paymentToken\":\"tok\\u0000\"}", 400, "invalid-field"),
                Arguments.of("over-long buyer.id", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\"],\"buyer\":{\"id\":\"" + "b".repeat(101) + "\",\"email\":\"a@example.com\"},\"paymentToken\":\"tok_ok\"}", 400, "invalid-field"),
                Arguments.of("body over the limit", "{\"eventId\":\"" + "x".repeat(20_000) + "\"}", 413, "body-too-large"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badPurchases")
    void aBadPurchaseGetsAProblemAndChangesNothing(String what, String body, int status, String kind) {
        long keysBefore = APP.db().count("SELECT COUNT(*) FROM idempotency_keys");
        long purchasesBefore = APP.db().count("SELECT COUNT(*) FROM purchases");

        Answer answer = client.post("/purchases", Map.of("Content-Type", "application/json",
                                                         "Idempotency-Key", UUID.randomUUID().toString()),
                                    body.getBytes(StandardCharsets.UTF_8));

        assertThat(answer.status()).as(answer.body()).isEqualTo(status);
        assertThat(answer.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(answer.body()).contains("\"type\":\"urn:lastseat:problem:" + kind + "\"").contains("\"detail\":")
                                 .contains("\"instance\":\"/purchases\"");
        assertThat(APP.db().count("SELECT COUNT(*) FROM idempotency_keys")).isEqualTo(keysBefore);
        assertThat(APP.db().count("SELECT COUNT(*) FROM purchases")).isEqualTo(purchasesBefore);
        assertThat(APP.client().event(EVENT).path("available").asInt()).isEqualTo(5);
        assertThat(APP.purchaseCalls()).isEmpty();
    }

    static Stream<Arguments> aNulInEachTextField() {
        String nul = "x\\u0000";
        return Stream.of(
                Arguments.of("eventId", "{\"eventId\":\"" + nul + "\",\"seats\":[\"A1\"],\"buyer\":{\"id\":\"a\",\"email\":\"a@example.com\"},\"paymentToken\":\"t\"}"),
                Arguments.of("seats[1]", "{\"eventId\":\"" + EVENT + "\",\"seats\":[\"A1\",\"" + nul + "\"],\"buyer\":{\"id\":\"a\",\"email\":\"a@example.com\"},\"paymentToken\":\"t\"}"),
                Arguments.of("buyer.id", "{\"eventId\":\"" + EVENT + "\",\"quantity\":1,\"buyer\":{\"id\":\"" + nul + "\",\"email\":\"a@example.com\"},\"paymentToken\":\"t\"}"),
                Arguments.of("buyer.email", "{\"eventId\":\"" + EVENT + "\",\"quantity\":1,\"buyer\":{\"id\":\"a\",\"email\":\"" + nul + "@example.com\"},\"paymentToken\":\"t\"}"),
                Arguments.of("paymentToken", "{\"eventId\":\"" + EVENT + "\",\"quantity\":1,\"buyer\":{\"id\":\"a\",\"email\":\"a@example.com\"},\"paymentToken\":\"" + nul + "\"}"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("aNulInEachTextField")
    void aNulInAnyTextFieldIsA400ThatNamesTheFieldAndChangesNothing(String field, String body) {
        long purchasesBefore = APP.db().count("SELECT COUNT(*) FROM purchases");

        Answer answer = client.post("/purchases", Map.of("Content-Type", "application/json",
                                                         "Idempotency-Key", UUID.randomUUID().toString()),
                                    body.getBytes(StandardCharsets.UTF_8));

        assertThat(answer.status()).as(answer.body()).isEqualTo(400);
        assertThat(answer.json().path("detail").asText()).as("names the field, not the value")
                .isEqualTo(field + " must not contain control characters (such as NUL, tab or line breaks)");
        assertThat(APP.db().count("SELECT COUNT(*) FROM purchases")).isEqualTo(purchasesBefore);
    }

    @Test
    void aBodyThatIsNotJsonIs415AndChangesNothing() {
        long purchasesBefore = APP.db().count("SELECT COUNT(*) FROM purchases");

        Answer answer = client.post("/purchases", Map.of("Content-Type", "text/plain", "Idempotency-Key", UUID.randomUUID().toString()),
                                    "A1 please".getBytes(StandardCharsets.UTF_8));

        assertThat(answer.status()).as(answer.body()).isEqualTo(415);
        assertThat(answer.body()).contains("urn:lastseat:problem:unsupported-media-type");
        assertThat(APP.db().count("SELECT COUNT(*) FROM purchases")).isEqualTo(purchasesBefore);
    }

    static Stream<Arguments> badEvents() {
        return Stream.of(
                Arguments.of("no seats and no capacity", "{\"name\":\"x\",\"price\":\"1.00\",\"currency\":\"EUR\"}"),
                Arguments.of("capacity 0", "{\"name\":\"x\",\"capacity\":0,\"price\":\"1.00\",\"currency\":\"EUR\"}"),
                Arguments.of("capacity over the limit", "{\"name\":\"x\",\"capacity\":10000000,\"price\":\"1.00\",\"currency\":\"EUR\"}"),
                Arguments.of("negative price", "{\"name\":\"x\",\"capacity\":2,\"price\":\"-1.00\",\"currency\":\"EUR\"}"),
                Arguments.of("bad currency", "{\"name\":\"x\",\"capacity\":2,\"price\":\"1.00\",\"currency\":\"euro\"}"),
                Arguments.of("duplicate seat", "{\"name\":\"x\",\"seats\":[\"A\",\"A\"],\"price\":\"1.00\",\"currency\":\"EUR\"}"),
                Arguments.of("unknown field", "{\"name\":\"x\",\"capacity\":2,\"price\":\"1.00\",\"currency\":\"EUR\",\"vip\":true}"),
                Arguments.of("NUL in the name", "{\"name\":\"x\\u0000\",\"capacity\":2,\"price\":\"1.00\",\"currency\":\"EUR\"}"),
                Arguments.of("unpaired surrogate in the name", "{\"name\":\"\\udc00x\",\"capacity\":2,\"price\":\"1.00\",\"currency\":\"EUR\"}"),
                Arguments.of("NUL in the id", "{\"id\":\"x\\u0000\",\"name\":\"x\",\"capacity\":2,\"price\":\"1.00\",\"currency\":\"EUR\"}"),
                Arguments.of("NUL in a seat label", "{\"name\":\"x\",\"seats\":[\"A\\u0000\"],\"price\":\"1.00\",\"currency\":\"EUR\"}"),
                Arguments.of("NUL in the currency", "{\"name\":\"x\",\"capacity\":2,\"price\":\"1.00\",\"currency\":\"EU\\u0000\"}"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badEvents")
    void aBadEventGets400AndCreatesNothing(String what, String body) {
        long eventsBefore = APP.db().count("SELECT COUNT(*) FROM events");

        Answer answer = client.post("/events", Map.of("Content-Type", "application/json"), body.getBytes(StandardCharsets.UTF_8));

        assertThat(answer.status()).as(answer.body()).isEqualTo(400);
        assertThat(answer.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(APP.db().count("SELECT COUNT(*) FROM events")).isEqualTo(eventsBefore);
    }

    @AfterEach
    void poolConnectionsCameBack() {
        Invariants.resourcesCameBack(APP);
    }
}
