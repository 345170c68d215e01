package lastseat.web;

import io.helidon.http.HeaderNames;
import io.helidon.http.Status;
import io.helidon.webserver.http.ServerResponse;

import java.time.Duration;

/**
 * A finished HTTP answer as bytes, so that it can be stored with its idempotency key and replayed
 * byte for byte. {@code location} and {@code retryAfter} may be null.
 */
public record Reply(int status, String contentType, String location, Duration retryAfter, byte[] body) {
    public static final String JSON = "application/json";
    public static final String PROBLEM_JSON = "application/problem+json";

    public static Reply json(int status, Object body, String location) {
        return new Reply(status, JSON, location, null, Json.bytes(body));
    }

    public static Reply problem(Problem problem, String instance) {
        return new Reply(problem.status(), PROBLEM_JSON, null, problem.retryAfter().orElse(null),
                         Json.bytes(problem.body(instance)));
    }

    public void send(ServerResponse response) {
        response.status(Status.create(status));
        response.header(HeaderNames.CONTENT_TYPE, contentType);
        if (location != null) {
            response.header(HeaderNames.LOCATION, location);
        }
        if (retryAfter != null) {
            response.header(HeaderNames.RETRY_AFTER, Long.toString(Math.max(1, retryAfter.toSeconds())));
        }
        response.send(body);
    }
}
