package lastseat.web;

import java.util.Map;

/**
 * A refusal decided at the web edge, as a value: its status, its {@code kind} (which becomes the
 * {@code type} {@code urn:lastseat:problem:<kind>}, one per kind of error, so clients can branch on
 * it), a title, a detail and named extensions. A route or a body reader throws it for the routing's
 * error handler, or hands it to {@link Edge} itself; either way {@link Edge} alone makes the answer —
 * the {@code application/problem+json} body (RFC 9457), the {@code Retry-After}, the metric's tag.
 *
 * <p>Contract: domain code never builds one. Its outcomes are values that the web edge maps to
 * problems ({@code PurchaseAnswers}), and input a domain rule refuses is {@link lastseat.input.InvalidInput}.
 *
 * <p>Hazard: the detail is read by whoever sent the request. Build it from what the server knows, in
 * words of its own; never from an exception's message, a library's or a database's text, or an outside
 * service's answer (log those where they are caught).
 */
public final class Problem extends RuntimeException {
    public static final String TYPE_PREFIX = "urn:lastseat:problem:";

    private final int status;
    private final String kind;
    private final String title;
    private final Map<String, Object> extensions;

    public Problem(int status, String kind, String title, String detail) {
        this(status, kind, title, detail, Map.of());
    }

    public Problem(int status, String kind, String title, String detail, Map<String, Object> extensions) {
        // A value on its way to the error handler, not a fault: no stack to fill.
        super(detail, null, false, false);
        this.status = status;
        this.kind = kind;
        this.title = title;
        this.extensions = Map.copyOf(extensions);
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

    public String title() {
        return title;
    }

    public String detail() {
        return getMessage();
    }

    public Map<String, Object> extensions() {
        return extensions;
    }
}
