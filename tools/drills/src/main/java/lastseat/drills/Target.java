package lastseat.drills;

import lastseat.testkit.Together;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Set;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.IntFunction;
import java.util.stream.Collectors;

/**
 * What a drill talks to: a running lastseat (its HTTP API and its drill endpoints) and the WireMock
 * serving its outside parts (the admin API to inject faults and read the journal, and the ledger).
 * Only HTTP, so a drill runs the same against {@code bin/drill}'s own processes, a server started
 * with {@code --url}, or a test's in-JVM server. Every request has a timeout.
 */
public final class Target {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);
    private final URI service;
    private final URI stubs;
    private final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    public Target(URI service, URI stubs) {
        this.service = service;
        this.stubs = stubs;
    }

    URI service() {
        return service;
    }

    URI stubs() {
        return stubs;
    }

    /** The same stubs, another lastseat (one a drill started itself). */
    Target on(URI otherService) {
        return new Target(otherService, stubs);
    }

    /** One HTTP answer and how long it took from send to the last byte, on the drill's clock. */
    record Answer(int status, Map<String, List<String>> headers, String body, long elapsedMillis) {
        JsonNode json() {
            try {
                return JSON.readTree(body);
            } catch (IOException e) {
                throw new UncheckedIOException("not JSON (" + status + "): " + body, e);
            }
        }

        String header(String name) {
            return headers.entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase(name))
                    .map(e -> e.getValue().getFirst()).findFirst().orElse(null);
        }

        /**
         * The server's own time for the answer ({@code Server-Timing: app;dur=}), from where the
         * deadline starts; the drill's clock when the header is missing. The drill's clock also
         * counts the wait for a connection to be accepted, which a burst on two cores makes long.
         */
        long serverMillis() {
            String timing = header("Server-Timing");
            if (timing != null && timing.startsWith("app;dur=")) {
                return Math.round(Double.parseDouble(timing.substring("app;dur=".length())));
            }
            return elapsedMillis;
        }

        String type() {
            return body.startsWith("{") ? json().path("type").asText("").replace("urn:lastseat:problem:", "") : "";
        }
    }

    // --- lastseat ---

    /**
     * The Idempotency-Key lastseat sends with every payment request of a purchase: its payment
     * gateway's contract with the provider, which the drills check from outside.
     */
    static String paymentKey(String purchaseId) {
        return "lastseat-payment-" + purchaseId;
    }

    /** A fresh event with seats 1..capacity. */
    String newEvent(int capacity) {
        return created("{\"name\":\"Drill\",\"capacity\":" + capacity + ",\"price\":\"40.00\",\"currency\":\"EUR\"}");
    }

    /** A fresh event with the named seats. */
    String newEvent(String... seats) {
        return created("{\"name\":\"Drill\",\"seats\":" + JSON.valueToTree(seats) + ",\"price\":\"40.00\",\"currency\":\"EUR\"}");
    }

    private String created(String event) {
        Answer answer = send(post(service, "/events", event, Map.of()));
        if (answer.status() != 201) {
            throw new IllegalStateException("POST /events answered " + answer.status() + ": " + answer.body());
        }
        return answer.json().path("id").asText();
    }

    static String purchaseBody(String eventId, int quantity, String buyer) {
        return "{\"eventId\":\"" + eventId + "\",\"quantity\":" + quantity + ",\"buyer\":{\"id\":\"" + buyer
               + "\",\"email\":\"" + buyer + "@example.com\"},\"paymentToken\":\"tok_ok\"}";
    }

    static String purchaseBody(String eventId, String seat, String buyer) {
        return "{\"eventId\":\"" + eventId + "\",\"seats\":[\"" + seat + "\"],\"buyer\":{\"id\":\"" + buyer
               + "\",\"email\":\"" + buyer + "@example.com\"},\"paymentToken\":\"tok_ok\"}";
    }

    Answer purchase(String key, String body) {
        return send(post(service, "/purchases", body, Map.of("Idempotency-Key", key)));
    }

    Answer buyOne(String eventId) {
        return purchase(UUID.randomUUID().toString(), purchaseBody(eventId, 1, "drill"));
    }

    JsonNode purchaseView(String id) {
        return ok(send(get(service, "/purchases/" + id)));
    }

    JsonNode invariants(String eventId) {
        return ok(send(get(service, "/drills/invariants?event=" + eventId)));
    }

    /** {@code GET /purchases?state=…}: how many purchases are in the state, and the 100 oldest. */
    JsonNode purchasesIn(String state) {
        return ok(send(get(service, "/purchases?state=" + state)));
    }

    /** {@code GET /outbox?state=…}: the count and up to 100 rows. */
    JsonNode outbox(String state) {
        return ok(send(get(service, "/outbox?state=" + state)));
    }

    Answer stampede(String mode, int buyers, int seats) {
        return send(post(service, "/drills/stampede",
                         "{\"mode\":\"" + mode + "\",\"buyers\":" + buyers + ",\"seats\":" + seats + "}", Map.of()));
    }

    /** Free permits of the payment bulkhead, read from the target's metrics. */
    int freePaymentPermits() {
        Answer metrics = send(HttpRequest.newBuilder(service.resolve("/observe/metrics")).timeout(REQUEST_TIMEOUT)
                                      .header("Accept", "text/plain").GET().build());
        return metrics.body().lines().filter(l -> l.startsWith("lastseat_payment_bulkhead_available"))
                .map(l -> (int) Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).findFirst()
                .orElseThrow(() -> new IllegalStateException("the target's /observe/metrics has no lastseat_payment_bulkhead_available"));
    }

    private boolean warmedUp;

    /**
     * Once per target: a few rounds of purchases at once with the stubs as the files have them, so
     * that a drill's timings measure the fault it injects, not a JVM that has not compiled the
     * purchase path yet (a server started seconds ago answered a 60-buyer burst 200 ms late).
     */
    synchronized void warmUp() {
        if (warmedUp) {
            return;
        }
        warmedUp = true;
        String event = newEvent(WARM_UP_BUYERS * WARM_UP_ROUNDS);
        for (int round = 0; round < WARM_UP_ROUNDS; round++) {
            together(WARM_UP_BUYERS, i -> buyOne(event));
        }
        warmConnections(WARM_UP_BUYERS);
        // The warm-up's emails are delivered, and any payment it left unknown settled, in the background:
        // a drill starts once they are, so that it measures its own fault alone.
        long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while ((outbox("pending").path("count").asInt() > 0 || invariants(event).path("held").asInt() > 0)
               && System.nanoTime() < until) {
            pause(Duration.ofMillis(100));
        }
    }

    private static void pause(Duration pause) {
        try {
            Thread.sleep(pause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static final int WARM_UP_BUYERS = 40;
    private static final int WARM_UP_ROUNDS = 3;

    /**
     * Opens {@code n} connections at once and leaves them in the client's pool, so that a burst
     * measures the server, not the TCP handshakes of a cold client.
     */
    void warmConnections(int n) {
        together(n, i -> send(get(service, "/observe/health")));
    }

    // --- the stubs ---

    /** File mappings only, scenarios at their start, an empty journal and ledger. */
    void resetStubs() {
        send(post(stubs, "/__admin/mappings/reset", "", Map.of()));
        send(post(stubs, "/__admin/scenarios/reset", "", Map.of()));
        send(HttpRequest.newBuilder(stubs.resolve("/__admin/requests")).timeout(REQUEST_TIMEOUT).DELETE().build());
        Answer ledger = send(HttpRequest.newBuilder(stubs.resolve("/__admin/ledger")).timeout(REQUEST_TIMEOUT).DELETE().build());
        if (ledger.status() >= 300) {
            throw new IllegalStateException("the stubs at " + stubs + " have no ledger (DELETE /__admin/ledger answered "
                                            + ledger.status() + "); start WireMock with the lastseat.testkit extensions as bin/run does");
        }
    }

    /** Adds a stub mapping (WireMock JSON) in front of the file mappings; returns its id. */
    String stub(String mapping) {
        Answer answer = send(post(stubs, "/__admin/mappings", mapping, Map.of()));
        if (answer.status() != 201) {
            throw new IllegalStateException("WireMock refused the stub (" + answer.status() + "): " + answer.body());
        }
        return answer.json().path("id").asText();
    }

    /** Removes one stub added by {@link #stub}; the journal and the ledger stay. */
    void unstub(String id) {
        send(HttpRequest.newBuilder(stubs.resolve("/__admin/mappings/" + id)).timeout(REQUEST_TIMEOUT).DELETE().build());
    }

    /** The requests WireMock received for {@code method urlPath}, oldest first. */
    List<JsonNode> journal(String method, String urlPath) {
        JsonNode found = ok(send(post(stubs, "/__admin/requests/find",
                                      "{\"method\":\"" + method + "\",\"urlPath\":\"" + urlPath + "\"}", Map.of())));
        List<JsonNode> requests = new ArrayList<>();
        found.path("requests").forEach(requests::add);
        return requests;
    }

    JsonNode ledger() {
        return ok(send(get(stubs, "/__admin/ledger")));
    }

    /**
     * The payment requests made for the purchases of {@code eventId}, oldest first: a drill counts
     * its own, not the background's (the reconciler may be settling another drill's purchase).
     */
    List<JsonNode> paymentCalls(String eventId) {
        Set<String> ids = purchaseIds(eventId);
        return journal("POST", "/payments").stream().filter(r -> ids.contains(Target.JSON_FIELD.apply(r.path("body").asText())))
                .toList();
    }

    /** The provider's captures for the purchases of {@code eventId}. */
    List<JsonNode> capturesFor(String eventId) {
        Set<String> ids = purchaseIds(eventId);
        List<JsonNode> captures = new ArrayList<>();
        ledger().path("captures").forEach(c -> {
            if (ids.contains(c.path("purchaseId").asText())) {
                captures.add(c);
            }
        });
        return captures;
    }

    private Set<String> purchaseIds(String eventId) {
        Set<String> ids = new HashSet<>();
        invariants(eventId).path("purchases").forEach(p -> ids.add(p.path("id").asText()));
        return ids;
    }

    /** The {@code purchaseId} a payment request's JSON body names ("" when it names none). */
    private static final java.util.function.Function<String, String> JSON_FIELD = body -> {
        try {
            return JSON.readTree(body).path("purchaseId").asText("");
        } catch (IOException e) {
            return "";
        }
    };

    // --- plumbing ---

    /** {@link Together#run}, with the drill's bound; an interrupt ends the drill. */
    static <T> List<T> together(int n, IntFunction<T> contender) {
        try {
            return Together.run(n, contender, REQUEST_TIMEOUT.multipliedBy(2));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** {@link Together#atMost}, with the drill's bound; an interrupt ends the drill. */
    static <T> List<T> atMost(int concurrency, int n, IntFunction<T> task) {
        try {
            return Together.atMost(concurrency, n, task, REQUEST_TIMEOUT.multipliedBy(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static HttpRequest get(URI base, String path) {
        return HttpRequest.newBuilder(base.resolve(path)).timeout(REQUEST_TIMEOUT).GET().build();
    }

    private static HttpRequest post(URI base, String path, String body, Map<String, String> headers) {
        HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(path))
                .timeout(REQUEST_TIMEOUT)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
        headers.forEach(request::header);
        return request.build();
    }

    private Answer send(HttpRequest request) {
        long start = System.nanoTime();
        try {
            HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
            return new Answer(response.statusCode(), response.headers().map(), response.body(),
                              (System.nanoTime() - start) / 1_000_000);
        } catch (IOException e) {
            throw new UncheckedIOException(request.method() + " " + request.uri() + " failed: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static JsonNode ok(Answer answer) {
        if (answer.status() != 200) {
            throw new IllegalStateException("expected 200, got " + answer.status() + ": " + answer.body());
        }
        return answer.json();
    }

    static String describe(List<Answer> answers) {
        return answers.stream().collect(Collectors.groupingBy(a -> a.status() + (a.type().isEmpty() ? "" : " " + a.type()),
                                                              java.util.TreeMap::new, Collectors.counting()))
                .entrySet().stream().map(e -> e.getValue() + "× " + e.getKey()).collect(Collectors.joining(", "));
    }

    static ObjectNode object() {
        return JSON.createObjectNode();
    }

    static ArrayNode array() {
        return JSON.createArrayNode();
    }
}
