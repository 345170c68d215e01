package lastseat.web;

import io.helidon.webserver.http.ServerRequest;

/**
 * When lastseat first saw a request, on the monotonic clock ({@link System#nanoTime()}): registered in
 * the request's context by the access filter before it reads the request's key, so that a purchase's
 * deadline and its {@code Server-Timing} count that read (and its wait for a connection) too.
 */
public record Arrival(long nanos) {
    /** The request's arrival; now, for a request no filter stamped. */
    public static long of(ServerRequest request) {
        return request.context().get(Arrival.class).map(Arrival::nanos).orElseGet(System::nanoTime);
    }
}
