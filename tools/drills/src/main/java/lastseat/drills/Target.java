package lastseat.drills;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import lastseat.testkit.Answer;
import lastseat.testkit.Instance;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.StubsClient;
import lastseat.testkit.Together;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.function.IntFunction;
import java.util.stream.Collectors;

/**
 * What a drill talks to: a running lastseat (its HTTP API and its drill endpoints, through the
 * testkit's {@link LastseatClient}) and the WireMock serving its outside parts (the admin API to
 * inject faults and read the journal, and the ledger, through {@link StubsClient}). Only HTTP, so a
 * drill runs the same against {@code bin/drill}'s own processes, a server started with {@code --url},
 * or a test's in-JVM server. Every request has a timeout; the drills' is a minute, because a drill
 * that injects a fault may hold a purchase for most of that.
 *
 * <p>The methods below name what a drill does with the two; the HTTP is the clients'.
 */
public final class Target {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);
    private final LastseatClient lastseat;
    private final StubsClient wiremock;

    public Target(Instance service, URI stubs) {
        this(new LastseatClient(service, LastseatClient.CONNECT_TIMEOUT, REQUEST_TIMEOUT), new StubsClient(stubs));
    }

    private Target(LastseatClient lastseat, StubsClient wiremock) {
        this.lastseat = lastseat;
        this.wiremock = wiremock;
    }

    Instance service() {
        return lastseat.instance();
    }

    URI stubs() {
        return wiremock.base();
    }

    /** The same stubs, another lastseat (one a drill started itself). */
    Target on(Instance otherService) {
        return new Target(lastseat.on(otherService), wiremock);
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
        return lastseat.newEvent(capacity);
    }

    /** A fresh event with the named seats. */
    String newEvent(String... seats) {
        return lastseat.newEvent(seats);
    }

    Answer purchase(String key, String body) {
        return lastseat.purchase(key, body);
    }

    Answer buyOne(String eventId) {
        return lastseat.purchaseQuantity(UUID.randomUUID().toString(), eventId, 1, "drill");
    }

    JsonNode purchaseView(String id) {
        return lastseat.purchaseView(id);
    }

    JsonNode invariants(String eventId) {
        return lastseat.invariants(eventId);
    }

    /** {@code GET /purchases?state=…}: how many purchases are in the state, and the 100 oldest. */
    JsonNode purchasesIn(String state) {
        return lastseat.purchasesIn(state);
    }

    /** {@code GET /outbox?state=…}: the count and up to 100 rows. */
    JsonNode outbox(String state) {
        return lastseat.outbox(state);
    }

    /** Free permits of the payment bulkhead, read from the target's metrics. */
    int freePaymentPermits() {
        return lastseat.freePaymentPermits();
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
        together(n, i -> lastseat.health());
    }

    // --- the stubs ---

    /** File mappings only, scenarios at their start, an empty journal and ledger. */
    void resetStubs() {
        wiremock.reset();
    }

    /** Adds a stub mapping (WireMock JSON) in front of the file mappings; returns its id. */
    String stub(String mapping) {
        return wiremock.stub(mapping);
    }

    /** Removes one stub added by {@link #stub}; the journal and the ledger stay. */
    void unstub(String id) {
        wiremock.unstub(id);
    }

    /** The requests WireMock received for {@code method urlPath}, oldest first. */
    List<JsonNode> journal(String method, String urlPath) {
        return wiremock.journal(method, urlPath);
    }

    /** Everything WireMock served ({@code GET /__admin/requests}), newest first as WireMock lists it. */
    JsonNode requests() {
        return wiremock.requests();
    }

    JsonNode ledger() {
        return wiremock.ledger();
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
