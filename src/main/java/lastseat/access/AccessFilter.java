package lastseat.access;

import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.http.Method;
import io.helidon.webserver.http.Filter;
import io.helidon.webserver.http.FilterChain;
import io.helidon.webserver.http.RoutingRequest;
import io.helidon.webserver.http.RoutingResponse;
import lastseat.web.Arrival;
import lastseat.web.Edge;
import lastseat.web.Problem;
import lastseat.work.Deadline;

import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Who may call what, decided before any route runs: one table per socket ({@link #need}), then the
 * request's {@code Authorization: Bearer <key>} checked against {@link ApiKeys} on every request.
 *
 * <p>Contract: a route the table does not name needs the operator's key (deny by default: a route added
 * and forgotten here is closed, not open). No key, or a key that is malformed, unknown or revoked: 401
 * with {@code WWW-Authenticate: Bearer}. A key whose role the route does not take: 403. Otherwise the
 * {@link Caller} is registered in the request's context and the route runs; which purchases a client sees
 * is the route's business (another client's purchase is 404 there). A refusal is handed to {@link Edge},
 * which makes every problem answer; only the {@code WWW-Authenticate} challenge is this filter's own.
 * The key's read waits for a connection at most {@code keyReadBound} from the request's {@link Arrival},
 * which the filter stamps first: a purchase's deadline counts from there, so its whole wait is in it.
 *
 * <p>Hazard: the table matches the path as the server routes it; a pattern here that is wider than the
 * route it means (a prefix instead of a whole segment) opens whatever else starts the same way.
 */
public final class AccessFilter implements Filter {
    private static final HeaderName WWW_AUTHENTICATE = HeaderNames.create("WWW-Authenticate");
    private static final Pattern SEGMENT = Pattern.compile("[^/]+");
    /** Compiled once: the table is read on every request of both sockets. */
    private static final Pattern TRAILING_SLASHES = Pattern.compile("/+$");

    /** What a route needs of its caller. */
    public enum Need {
        ANYONE, CLIENT, CLIENT_OR_OPERATOR, OPERATOR;

        boolean admits(Role role) {
            return switch (this) {
                case ANYONE, CLIENT_OR_OPERATOR -> true;
                case CLIENT -> role == Role.CLIENT;
                case OPERATOR -> role == Role.OPERATOR;
            };
        }
    }

    /** Which of the two sockets a filter guards. */
    public enum Socket { PUBLIC, ADMIN }

    private final ApiKeys keys;
    private final Socket socket;
    private final Edge edge;
    private final Duration keyReadBound;

    /**
     * {@code keyReadBound}: on the public socket {@code purchase.deadline − purchase.answer-reserve}, so that no
     * key's read outlasts what a purchase may spend on its work; on the admin socket {@code db.connection-timeout}, the operator's
     * calls waiting as long as the pool allows.
     */
    public AccessFilter(ApiKeys keys, Socket socket, Edge edge, Duration keyReadBound) {
        this.keys = keys;
        this.socket = socket;
        this.edge = edge;
        this.keyReadBound = keyReadBound;
    }

    /** The table: what {@code method path} on {@code socket} needs. */
    public static Need need(Socket socket, Method method, String path) {
        String[] parts = TRAILING_SLASHES.matcher(path).replaceAll("").split("/", -1);
        if (socket == Socket.ADMIN) {
            boolean read = method == Method.GET || method == Method.HEAD;
            boolean health = parts.length >= 3 && parts[1].equals("observe") && parts[2].equals("health");
            // The operator's page: its files hold no data; what it reads (/ops/api) needs the key.
            boolean page = parts.length >= 2 && parts[1].equals("ops") && !(parts.length >= 3 && parts[2].equals("api"));
            return (health || page) && read ? Need.ANYONE : Need.OPERATOR;
        }
        if (parts.length == 3 && parts[1].equals("events") && (method == Method.GET || method == Method.HEAD)
            && SEGMENT.matcher(parts[2]).matches()) {
            return Need.ANYONE;
        }
        if (parts.length == 2 && parts[1].equals("openapi") && method == Method.GET) {
            // The API's document: what a client reads before it has a key.
            return Need.ANYONE;
        }
        if (parts.length >= 2 && parts[1].equals("purchases")) {
            if (parts.length == 2) {
                return method == Method.POST ? Need.CLIENT : method == Method.GET ? Need.CLIENT_OR_OPERATOR : Need.OPERATOR;
            }
            if (parts.length == 3 && method == Method.GET) {
                return Need.CLIENT_OR_OPERATOR;
            }
            if (parts.length == 4 && method == Method.POST && parts[3].equals("cancel")) {
                return Need.CLIENT;
            }
        }
        return Need.OPERATOR;
    }

    @Override
    public void filter(FilterChain chain, RoutingRequest request, RoutingResponse response) {
        long arrived = System.nanoTime();
        Need need = need(socket, request.prologue().method(), request.path().path());
        if (need == Need.ANYONE) {
            // Open routes read no key at all: a health probe or a seat map costs no lookup.
            chain.proceed();
            return;
        }
        Optional<String> presented = request.headers().first(HeaderNames.AUTHORIZATION).flatMap(AccessFilter::bearer);
        if (presented.isEmpty()) {
            refuse(request, response, new Problem(401, "unauthorized", "Unauthorized", "Send an API key: Authorization: Bearer <key>"),
                   "Bearer realm=\"lastseat\"");
            return;
        }
        request.context().register(new Arrival(arrived));
        Optional<Caller> caller = keys.caller(presented.get(), Deadline.after(keyReadBound, arrived));
        if (caller.isEmpty()) {
            refuse(request, response, new Problem(401, "unauthorized", "Unauthorized", "The API key is not valid (unknown or revoked)"),
                   "Bearer realm=\"lastseat\", error=\"invalid_token\"");
            return;
        }
        if (!need.admits(caller.get().role())) {
            refuse(request, response, new Problem(403, "forbidden", "Forbidden",
                   (caller.get().operator() ? "An operator" : "A client") + " key may not " + request.prologue().method().text() + " "
                   + (socket == Socket.ADMIN ? "this admin route" : "this route")), null);
            return;
        }
        request.context().register(caller.get());
        chain.proceed();
    }

    /** The token of {@code Bearer <token>}; empty for any other scheme or an empty token. */
    private static Optional<String> bearer(String header) {
        String value = header.trim();
        if (value.length() <= 7 || !value.substring(0, 7).toLowerCase(Locale.ROOT).equals("bearer ")) {
            return Optional.empty();
        }
        String token = value.substring(7).trim();
        return token.isEmpty() ? Optional.empty() : Optional.of(token);
    }

    private void refuse(RoutingRequest request, RoutingResponse response, Problem refusal, String challenge) {
        if (challenge != null) {
            response.header(WWW_AUTHENTICATE, challenge);
        }
        edge.send(refusal, request.path().absolute().path(), response);
    }
}
