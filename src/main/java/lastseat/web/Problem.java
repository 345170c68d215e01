package lastseat.web;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * An answer that is not a success, carried as an exception until it is written as
 * {@code application/problem+json} (RFC 9457). {@code kind} becomes the {@code type}
 * {@code urn:lastseat:problem:<kind>}, one per kind of error, so clients can branch on it.
 * Subclasses name the outcomes of the domain (seats taken, fraud declined, ...).
 *
 * <p>Hazard: the detail is read by whoever sent the request. Build it from what the server knows, in
 * words of its own; never from an exception's message, a library's or a database's text, or an outside
 * service's answer (log those where they are caught). {@link Failures} maps every other failure.
 */
public class Problem extends RuntimeException {
    public static final String TYPE_PREFIX = "urn:lastseat:problem:";

    private final int status;
    private final String kind;
    private final String title;
    private final Map<String, Object> extensions;
    private final Duration retryAfter;

    public Problem(int status, String kind, String title, String detail) {
        this(status, kind, title, detail, Map.of(), null, null);
    }

    public Problem(int status, String kind, String title, String detail, Map<String, Object> extensions,
                   Duration retryAfter, Throwable cause) {
        super(detail, cause, false, false);
        this.status = status;
        this.kind = kind;
        this.title = title;
        this.extensions = Map.copyOf(extensions);
        this.retryAfter = retryAfter;
    }

    public static Problem badRequest(String kind, String detail) {
        return new Problem(400, kind, "Bad request", detail);
    }

    public static Problem notFound(String kind, String detail) {
        return new Problem(404, kind, "Not found", detail);
    }

    public int status() {
        return status;
    }

    public String kind() {
        return kind;
    }

    public Optional<Duration> retryAfter() {
        return Optional.ofNullable(retryAfter);
    }

    /** The RFC 9457 members, in a stable order, then the extensions by name. */
    public Map<String, Object> body(String instance) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("type", TYPE_PREFIX + kind);
        body.put("title", title);
        body.put("status", status);
        body.put("detail", getMessage());
        if (instance != null) {
            body.put("instance", instance);
        }
        // In name order: Map.copyOf's order changes from one JVM to the next, and two instances must answer
        // the same problem byte for byte (a retry may reach the other one).
        body.putAll(new java.util.TreeMap<>(extensions));
        return body;
    }
}
