package lastseat.access;

import io.helidon.webserver.http.ServerRequest;

import java.util.OptionalInt;

/**
 * Who sent a request, as its key says: the key's name, its role and, for a client, the most purchases it
 * may have in flight on one instance (empty: no limit of its own). Registered in the request's context by
 * {@link AccessFilter}; a route that needs a caller reads it with {@link #of}.
 */
public record Caller(String name, Role role, OptionalInt maxInFlight) {

    public boolean operator() {
        return role == Role.OPERATOR;
    }

    /**
     * The caller of a request the filter let through as a key's. Throws when there is none: a route that
     * asks served a request without a key, which the filter's table must not allow.
     */
    public static Caller of(ServerRequest request) {
        return request.context().get(Caller.class)
                .orElseThrow(() -> new IllegalStateException("no caller on " + request.prologue().method() + " "
                                                             + request.path().path() + ": the access table lets it through without a key"));
    }
}
