package lastseat.web;

import io.helidon.http.HeaderNames;
import io.helidon.http.Status;
import io.helidon.webserver.http.ServerResponse;

import java.time.Duration;

/**
 * A finished HTTP answer as bytes, so that it can be stored with its idempotency key and replayed
 * byte for byte. {@code location} and {@code retryAfter} may be null. A problem's reply is made by
 * {@link Edge} only, which decides its {@code Retry-After}.
 */
public record Reply(int status, String contentType, String location, Duration retryAfter, byte[] body) {
    public static final String JSON = "application/json";
    public static final String PROBLEM_JSON = "application/problem+json";

    public static Reply json(int status, Object body, String location) {
        return new Reply(status, JSON, location, null, Json.bytes(body));
    }

    public void send(ServerResponse response) {
        response.status(Status.create(status));
        response.header(HeaderNames.CONTENT_TYPE, contentType);
        if (location != null) {
            response.header(HeaderNames.LOCATION, location);
        }
        if (retryAfter != null) {
            response.header(HeaderNames.RETRY_AFTER, seconds(retryAfter));
        }
        response.send(body);
    }

    /** A Retry-After in whole seconds, never 0 (which would invite an immediate retry). */
    static String seconds(Duration retryAfter) {
        return Long.toString(Math.max(1, retryAfter.toSeconds()));
    }
}
