package lastseat.web;

import io.helidon.http.DirectHandler;
import io.helidon.http.HeaderNames;
import io.helidon.http.HttpException;
import io.helidon.http.ServerResponseHeaders;
import io.helidon.http.Status;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import lastseat.db.DatabaseBusy;
import lastseat.input.InvalidInput;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The one mapper at the web edge: every problem lastseat answers, on either port, becomes its answer
 * here and nowhere else — the status, the {@code application/problem+json} body (RFC 9457), and the
 * {@code Retry-After}. It also holds the one error mapping: what a failure that no route answered
 * becomes ({@link #problemFor}), registered on both routings by {@link #errors}, used by
 * {@code PurchaseRoutes} for what escapes a purchase, and Helidon's own refusals before routing
 * ({@link #transport}).
 *
 * <p>The Retry-After rule, the only one: every 503 and every 429 asks the client to come back after
 * {@code purchase.retry-after} (whole seconds, at least 1); no other answer carries a Retry-After. A
 * route never chooses one.
 *
 * <p>The failures: a {@link Problem} is itself; {@link InvalidInput} (a domain rule refused the input)
 * is 400 {@code invalid-field}; Helidon's {@link HttpException} keeps its status ({@code not-found},
 * {@code http-<status>}); {@link DatabaseBusy} (no connection, or no row lock, in time: rolled back) is
 * 503 {@code database-busy}; anything else is 500 {@code internal}, saying only what the caller may
 * rely on.
 *
 * <p>Hazard: the log keeps an exception's words; the body never does. A detail is the server's own
 * sentence, and a kind or a status chosen here is what OpenApiTest holds to the API's document.
 */
public final class Edge {
    private static final Logger LOG = Logger.getLogger(Edge.class.getName());

    private final Duration retryAfter;

    /** {@code retryAfter}: {@code purchase.retry-after}, the Retry-After of every 503 and 429. */
    public Edge(Duration retryAfter) {
        this.retryAfter = retryAfter;
    }

    /** The answer to {@code problem}, about {@code instance} (the request's path): what is sent, and what an Idempotency-Key stores. */
    public Reply reply(Problem problem, String instance) {
        return new Reply(problem.status(), Reply.PROBLEM_JSON, null, retryAfter(problem.status()), Json.bytes(body(problem, instance)));
    }

    public void send(Problem problem, String instance, ServerResponse response) {
        reply(problem, instance).send(response);
    }

    /** The Retry-After rule: 503 and 429 ask the client to come back after {@code purchase.retry-after}. */
    private Duration retryAfter(int status) {
        return status == 503 || status == 429 ? retryAfter : null;
    }

    /** The RFC 9457 members, in a stable order, then the extensions by name. */
    private static Map<String, Object> body(Problem problem, String instance) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("type", Problem.TYPE_PREFIX + problem.kind());
        body.put("title", problem.title());
        body.put("status", problem.status());
        body.put("detail", problem.detail());
        if (instance != null) {
            body.put("instance", instance);
        }
        // In name order: Map.copyOf's order changes from one JVM to the next, and two instances must answer
        // the same problem byte for byte (a retry may reach the other one).
        body.putAll(new TreeMap<>(problem.extensions()));
        return body;
    }

    /**
     * The problem for a failure nobody answered on {@code path}; {@code internal} is the 500's detail,
     * for the caller to state what it knows. A failure that is not the client's is logged here, once.
     */
    public Problem problemFor(Throwable failure, String path, String internal) {
        return switch (failure) {
            case Problem problem -> problem;
            case InvalidInput invalid -> Problem.badRequest("invalid-field", invalid.getMessage());
            case HttpException http -> http(http, path);
            case DatabaseBusy busy -> {
                // Overload, not a fault: every refused request would log it at once.
                LOG.log(Level.FINE, "database busy on " + path, busy);
                yield new Problem(503, "database-busy", "Busy",
                        "The server has more work in progress than its database connections can serve; this request changed "
                        + "nothing, try it again after Retry-After");
            }
            default -> {
                LOG.log(Level.SEVERE, "unexpected failure on " + path, failure);
                yield new Problem(500, "internal", "Internal error", internal);
            }
        };
    }

    /** Helidon's own refusals in routing (no route, ...): the status stays, its message goes to the log only. */
    private static Problem http(HttpException e, String path) {
        int status = e.status().code();
        LOG.log(Level.FINE, () -> "answered " + status + " on " + path + ": " + e.getMessage());
        String kind = status == 404 ? "not-found" : "http-" + status;
        String detail = status == 404 ? "There is no resource at " + path
                : "The request was refused (" + status + " " + e.status().reasonPhrase() + ")";
        return new Problem(status, kind, e.status().reasonPhrase(), detail);
    }

    /** The routing's one error handler: every exception a route or filter lets out is answered by {@link #problemFor}. */
    public void errors(HttpRouting.Builder routing) {
        routing.error(Exception.class, this::unanswered);
    }

    private void unanswered(ServerRequest request, ServerResponse response, Exception e) {
        String path = request.path().absolute().path();
        send(problemFor(e, path, "The request failed unexpectedly; try again, or tell the operator if it keeps failing"),
             path, response);
    }

    /**
     * Errors Helidon raises before routing (a body over server.max-payload-size, a broken request line or
     * header). Helidon's message names its parser's findings in its own words, and may quote what was
     * sent: it goes to the log, and the answer says what went wrong in ours.
     */
    public DirectHandler.TransportResponse transport(DirectHandler.TransportRequest request, DirectHandler.EventType type,
                                                     Status status, ServerResponseHeaders headers, String message) {
        LOG.log(Level.FINE, () -> "refused a request before routing with " + status.code() + ": " + message);
        Problem problem = switch (status.code()) {
            case 413 -> new Problem(413, "body-too-large", "Payload too large", "The request body is larger than the server accepts");
            case 414 -> new Problem(414, "uri-too-long", status.reasonPhrase(), "The request's path and query are longer than the server accepts");
            case 431 -> new Problem(431, "headers-too-large", status.reasonPhrase(), "The request's headers are larger than the server accepts");
            default -> new Problem(status.code(), "bad-request", status.reasonPhrase(),
                                   "The request could not be read as HTTP: check its request line, headers and length");
        };
        Reply reply = reply(problem, request.path());
        DirectHandler.TransportResponse.Builder answer = DirectHandler.TransportResponse.builder()
                .status(status)
                .headers(headers)
                .header(HeaderNames.CONTENT_TYPE, reply.contentType())
                .entity(reply.body());
        if (reply.retryAfter() != null) {
            answer.header(HeaderNames.RETRY_AFTER, Reply.seconds(reply.retryAfter()));
        }
        return answer.build();
    }
}
