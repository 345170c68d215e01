package lastseat.testkit;

import com.fasterxml.jackson.databind.JsonNode;

import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The admin API of the WireMock serving lastseat's outside parts, for callers that reach it over
 * HTTP only (the drills, the benchmark): reset it to the file mappings, add and remove a stub,
 * read the request journal, read and empty the truthful provider's ledger ({@link LedgerAdmin}).
 *
 * <p>Hazard: the ledger lives in the stubs' JVM; stubs started without the testkit's extensions
 * have none, and a drill reading an empty ledger would judge nothing. {@link #reset()} refuses them
 * loudly rather than let a drill pass on no evidence.
 */
public final class StubsClient implements AutoCloseable {
    public static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    /** The journal of a long campaign is large; reading it can take a while on a busy machine. */
    public static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);

    private final URI base;
    private final Http http;

    /** A client of the WireMock at {@code base}, with the default timeouts. */
    public StubsClient(URI base) {
        this.base = base;
        this.http = new Http(CONNECT_TIMEOUT, REQUEST_TIMEOUT);
    }

    public URI base() {
        return base;
    }

    /** Closes its JDK client once the exchanges under way are over. */
    @Override
    public void close() {
        http.close();
    }

    /** File mappings only, scenarios at their start, an empty journal and ledger. */
    public void reset() {
        http.send(post("/__admin/mappings/reset", ""));
        http.send(post("/__admin/scenarios/reset", ""));
        http.send(http.request(base, "/__admin/requests").DELETE().build());
        Answer ledger = http.send(http.request(base, "/__admin/ledger").DELETE().build());
        if (ledger.status() >= 300) {
            throw new IllegalStateException("the stubs at " + base + " have no ledger (DELETE /__admin/ledger answered "
                                            + ledger.status() + "); start WireMock with the lastseat.testkit extensions as bin/run does");
        }
    }

    /** Adds a stub mapping (WireMock JSON) in front of the file mappings; returns its id. */
    public String stub(String mapping) {
        Answer answer = http.send(post("/__admin/mappings", mapping));
        if (answer.status() != 201) {
            throw new IllegalStateException("WireMock refused the stub (" + answer.status() + "): " + answer.body());
        }
        return answer.json().path("id").asText();
    }

    /** Removes one stub added by {@link #stub}; the journal and the ledger stay. */
    public void unstub(String id) {
        http.send(http.request(base, "/__admin/mappings/" + id).DELETE().build());
    }

    /** The requests WireMock received for {@code method urlPath}, oldest first. */
    public List<JsonNode> journal(String method, String urlPath) {
        JsonNode found = ok(http.send(post("/__admin/requests/find", "{\"method\":\"" + method + "\",\"urlPath\":\"" + urlPath + "\"}")));
        List<JsonNode> requests = new ArrayList<>();
        found.path("requests").forEach(requests::add);
        return requests;
    }

    /** {@code GET /__admin/requests}: everything WireMock served, as it lists it (newest first), with how it answered. */
    public JsonNode requests() {
        return ok(http.send(http.request(base, "/__admin/requests").GET().build()));
    }

    /** {@code GET /__admin/ledger}: payments, captures, refunds, emails and the most payments at once. */
    public JsonNode ledger() {
        return ok(http.send(http.request(base, "/__admin/ledger").GET().build()));
    }

    /** {@code DELETE /__admin/ledger}: an empty ledger and in-flight meter; the mappings stay. */
    public void clearLedger() {
        http.send(http.request(base, "/__admin/ledger").DELETE().build());
    }

    private HttpRequest post(String path, String body) {
        return http.request(base, path).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8)).build();
    }

    private static JsonNode ok(Answer answer) {
        if (answer.status() != 200) {
            throw new IllegalStateException("expected 200, got " + answer.status() + ": " + answer.body());
        }
        return answer.json();
    }
}
