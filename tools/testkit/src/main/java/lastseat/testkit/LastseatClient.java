package lastseat.testkit;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * The one HTTP client to lastseat that the tests, the drills and the benchmark share: a method per
 * route of the API, the operator's routes and the drill endpoints, each answering an {@link Answer}
 * (what a test asserts on) or, where only a 200 makes sense, its JSON. Only HTTP, so it talks the same
 * to a server in the test's JVM, a process a drill started, or a deployment with drills enabled.
 *
 * <p>Contract: nothing is retried and nothing is hidden. A status that is not the one a typed read
 * expects is an {@link IllegalStateException} carrying the answer; a failed exchange (refused, reset,
 * timed out) is an {@link java.io.UncheckedIOException}; {@link #get}, {@link #post} and
 * {@link #purchase} answer whatever the server said, which is what a test of refusals needs. The raw
 * {@link #post(String, Map, byte[])} sends exactly the headers and bytes it is given, for tests of bad input.
 *
 * <p>Hazard: every request has a timeout ({@link #REQUEST_TIMEOUT} unless the caller sets another),
 * and a purchase can take a deadline and more; a caller that measures bounds must use the answer's
 * own clocks ({@link Answer#serverMillis()}, {@link Answer#elapsedMillis()}), not the timeout.
 *
 * <p>Closing: a client made with a constructor owns its JDK client (a selector thread, pooled
 * connections) and {@link #close()} closes it, for every view made from it with {@link #on}; closing
 * a view does nothing. One client per program or test class is the rule; a buyer on a new connection
 * of its own (bin/bench's bursts) goes through {@link NewConnection} instead.
 */
public final class LastseatClient implements AutoCloseable {
    public static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    public static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PAYMENT_PERMITS = "lastseat_payment_bulkhead_available";

    private final Instance instance;
    private final URI base;
    private final Http http;
    /** False for a view made by {@link #on}: the JDK client is its maker's to close. */
    private final boolean ownsHttp;

    /** A client of {@code instance}, with the default timeouts. */
    public LastseatClient(Instance instance) {
        this(instance, CONNECT_TIMEOUT, REQUEST_TIMEOUT);
    }

    public LastseatClient(Instance instance, Duration connectTimeout, Duration requestTimeout) {
        this(instance, new Http(connectTimeout, requestTimeout), true);
    }

    private LastseatClient(Instance instance, Http http, boolean ownsHttp) {
        this.instance = instance;
        this.base = instance.api();
        this.http = http;
        this.ownsHttp = ownsHttp;
    }

    /** Another lastseat (one started after a kill, a second instance) through the same JDK client and timeouts. */
    public LastseatClient on(Instance other) {
        return new LastseatClient(other, http, false);
    }

    /** The same lastseat called with another client's key (a second ticket shop), through the same JDK client. */
    public LastseatClient as(String clientKey) {
        return on(instance.withClientKey(clientKey));
    }

    /** Closes the JDK client (after the exchanges under way) if this client made it; a view from {@link #on} closes nothing. */
    @Override
    public void close() {
        if (ownsHttp) {
            http.close();
        }
    }

    /** The public port's address. */
    public URI base() {
        return base;
    }

    public Instance instance() {
        return instance;
    }

    // --- events ---

    /** {@code POST /events}: a fresh event with seats 1..capacity at 40.00 EUR; its JSON as created. */
    public JsonNode createEvent(int capacity) {
        return created(post("/events", null, "{\"name\":\"Test\",\"capacity\":" + capacity
                                             + ",\"price\":\"40.00\",\"currency\":\"EUR\"}"));
    }

    /** {@code POST /events}: a fresh event with the named seats at 40.00 EUR; its JSON as created. */
    public JsonNode createEvent(String... seats) {
        return created(post("/events", null, "{\"name\":\"Test\",\"seats\":" + list(seats)
                                             + ",\"price\":\"40.00\",\"currency\":\"EUR\"}"));
    }

    /** The id of a fresh event with seats 1..capacity. */
    public String newEvent(int capacity) {
        return createEvent(capacity).path("id").asText();
    }

    /** The id of a fresh event with the named seats. */
    public String newEvent(String... seats) {
        return createEvent(seats).path("id").asText();
    }

    /** {@code GET /events/{id}}: capacity, available, held and sold. */
    public JsonNode event(String id) {
        return ok(send("GET", base, "/events/" + id, null, null, null));
    }

    // --- purchases ---

    /** {@code POST /purchases} with the key and the body as given; the answer whatever it is. */
    public Answer purchase(String key, String body) {
        return post("/purchases", key, body);
    }

    /** {@link #purchase} of the named seats by ada, paying with the token the stubs approve. */
    public Answer purchaseSeats(String key, String eventId, String... seats) {
        return purchase(key, seatsBody(eventId, seats));
    }

    /** {@link #purchase} of any {@code quantity} seats by {@code buyer}, paying with the token the stubs approve. */
    public Answer purchaseQuantity(String key, String eventId, int quantity, String buyer) {
        return purchase(key, quantityBody(eventId, quantity, buyer));
    }

    /** A purchase body for the named seats, buyer ada, token {@code tok_ok}. */
    public static String seatsBody(String eventId, String... seats) {
        return buyerBody(eventId, "ada", "tok_ok", seats);
    }

    /** A purchase body for the named seats by {@code buyer} (email {@code <buyer>@example.com}) paying with {@code token}. */
    public static String buyerBody(String eventId, String buyer, String token, String... seats) {
        return "{\"eventId\":" + quote(eventId) + ",\"seats\":" + list(seats) + "," + buyerAndToken(buyer, token) + "}";
    }

    /** A purchase body for {@code quantity} seats, any of them, by {@code buyer} paying with {@code tok_ok}. */
    public static String quantityBody(String eventId, int quantity, String buyer) {
        return "{\"eventId\":" + quote(eventId) + ",\"quantity\":" + quantity + "," + buyerAndToken(buyer, "tok_ok") + "}";
    }

    /** {@code GET /purchases/{id}}: its state, seats, reason and timeline. */
    public JsonNode purchaseView(String id) {
        return ok(get("/purchases/" + id));
    }

    /** {@code GET /purchases?state=…}: how many purchases are in the state, and the 100 oldest. */
    public JsonNode purchasesIn(String state) {
        return ok(get("/purchases?state=" + state));
    }

    /** {@code POST /purchases/{id}/cancel}; 409 and 404 are answers too. */
    public Answer cancel(String purchaseId) {
        return send("POST", base, "/purchases/" + purchaseId + "/cancel", instance.clientKey(), null, "");
    }

    // --- the operator's routes ---

    /** {@code GET /outbox?state=…}: the count and up to 100 rows. */
    public JsonNode outbox(String state) {
        return ok(get("/outbox?state=" + state));
    }

    /** {@code POST /outbox/{id}/retry}: a DEAD row queued again; 409 when it is not dead, 404 when there is none. */
    public Answer retryOutbox(String id) {
        return post("/outbox/" + id + "/retry", null, "");
    }

    /** {@code GET /observe/health}. */
    public Answer health() {
        return get("/observe/health");
    }

    /** {@code GET /observe/metrics} in the Prometheus text format. */
    public String metrics() {
        Answer metrics = http.send(http.request(instance.admin(), "/observe/metrics").header("Accept", "text/plain")
                                           .header("Authorization", "Bearer " + instance.operatorKey()).GET().build());
        if (metrics.status() != 200) {
            throw new IllegalStateException("GET /observe/metrics answered " + metrics.status() + ": " + metrics.body());
        }
        return metrics.body();
    }

    /** The value of the first metric line that starts with {@code name} (tags included), if there is one. */
    public OptionalDouble metric(String name) {
        return metrics().lines().filter(l -> l.startsWith(name))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).findFirst();
    }

    /** Free permits of the payment bulkhead, read from the metrics. */
    public int freePaymentPermits() {
        return (int) metric(PAYMENT_PERMITS).orElseThrow(() -> new IllegalStateException(
                instance.admin() + "/observe/metrics has no " + PAYMENT_PERMITS));
    }

    /** What {@link #buyOneSeat} found: the purchase's answer, the event's invariant violations, the permits free after it. */
    public record OneSeat(Answer answer, JsonNode violations, int freePermits) {
    }

    /**
     * One buyer buys the only seat of a new event, then the invariants (I1, I2, I4) are read for that event and
     * the payment permits counted: what a test of how a server was started checks it can still do.
     */
    public OneSeat buyOneSeat(String buyer) {
        String event = newEvent(1);
        Answer answer = purchaseQuantity(UUID.randomUUID().toString(), event, 1, buyer);
        JsonNode violations = invariants(event).path("violations");
        if (!violations.isArray()) {
            throw new IllegalStateException("the invariants' answer for " + event + " has no list of violations: " + invariants(event));
        }
        return new OneSeat(answer, violations, freePaymentPermits());
    }

    // --- the drill endpoints (answer 404 unless drills are enabled) ---

    /** {@code GET /drills/invariants?event=…}: the event's seats and purchases as the database has them. */
    public JsonNode invariants(String eventId) {
        return ok(get("/drills/invariants?event=" + eventId));
    }

    // --- raw ---

    /**
     * {@code GET path} on the port that serves it ({@link Instance#adminPath}: the admin port, else the
     * public one), with the key its role needs: the operator's on the admin port, the client's on the public.
     */
    public Answer get(String path) {
        return send("GET", portOf(path), path, keyFor("GET", path), null, null);
    }

    /**
     * A JSON body to {@code path}, with an {@code Idempotency-Key} unless {@code idempotencyKey} is null, on
     * the port and with the key as {@link #get} (and the operator's for {@code POST /events}).
     */
    public Answer post(String path, String idempotencyKey, String body) {
        return send("POST", portOf(path), path, keyFor("POST", path), idempotencyKey, body);
    }

    /**
     * Exactly these headers and bytes to {@code path} (no Content-Type unless given): for tests of bad input.
     * The key is added as {@link #post(String, String, String)} would, unless the headers carry an Authorization.
     */
    public Answer post(String path, Map<String, String> headers, byte[] body) {
        HttpRequest.Builder request = http.request(portOf(path), path).POST(HttpRequest.BodyPublishers.ofByteArray(body));
        headers.forEach(request::header);
        if (headers.keySet().stream().noneMatch("Authorization"::equalsIgnoreCase)) {
            request.header("Authorization", "Bearer " + keyFor("POST", path));
        }
        return http.send(request.build());
    }

    /**
     * Any request as given: {@code method path} at {@code port} (a base URI), with {@code Authorization:
     * Bearer <bearer>} unless it is null, an {@code Idempotency-Key} unless null, and a JSON body unless null.
     * For the tests of who may call what.
     */
    public Answer send(String method, URI port, String path, String bearer, String idempotencyKey, String body) {
        HttpRequest.Builder request = http.request(port, path)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                                             : HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
        if (body != null) {
            request.header("Content-Type", "application/json");
        }
        if (bearer != null) {
            request.header("Authorization", "Bearer " + bearer);
        }
        if (idempotencyKey != null) {
            request.header("Idempotency-Key", idempotencyKey);
        }
        return http.send(request.build());
    }

    private URI portOf(String path) {
        return Instance.adminPath(path) ? instance.admin() : base;
    }

    private String keyFor(String method, String path) {
        boolean operator = Instance.adminPath(path) || (method.equals("POST") && path.startsWith("/events"));
        return operator ? instance.operatorKey() : instance.clientKey();
    }

    // --- plumbing ---

    private static JsonNode created(Answer answer) {
        if (answer.status() != 201) {
            throw new IllegalStateException("POST /events answered " + answer.status() + ": " + answer.body());
        }
        return answer.json();
    }

    private static JsonNode ok(Answer answer) {
        if (answer.status() != 200) {
            throw new IllegalStateException("expected 200, got " + answer.status() + ": " + answer.body());
        }
        return answer.json();
    }

    private static String buyerAndToken(String buyer, String token) {
        return "\"buyer\":{\"id\":" + quote(buyer) + ",\"email\":" + quote(buyer + "@example.com") + "},\"paymentToken\":"
               + quote(token);
    }

    private static String list(String... values) {
        return Arrays.stream(values).map(LastseatClient::quote).collect(Collectors.joining(",", "[", "]"));
    }

    /** A JSON string: the same bytes as a hand-written one for plain labels, escaped for any other. */
    private static String quote(String value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(e);
        }
    }
}
