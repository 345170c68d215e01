package lastseat.testkit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * One HTTP answer, from lastseat ({@link LastseatClient}) or from the stubs' admin API
 * ({@link StubsClient}): the status, the headers, the body's bytes exactly as they came (a replay
 * is compared byte for byte), and how long it took from send to the last byte on the caller's clock.
 *
 * <p>Hazard: {@link #elapsedMillis()} also counts the wait for a connection to be accepted, which a
 * burst on two cores makes long; a bound the design states from lastseat's first look at the request (I5) is checked
 * with {@link #serverMillis()}.
 */
public record Answer(int status, Map<String, List<String>> headers, byte[] raw, long elapsedMillis) {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PROBLEM = "urn:lastseat:problem:";
    private static final String APP_TIMING = "app;dur=";

    public String body() {
        return new String(raw, StandardCharsets.UTF_8);
    }

    public JsonNode json() {
        try {
            return JSON.readTree(raw);
        } catch (IOException e) {
            throw new UncheckedIOException("not JSON (" + status + "): " + body(), e);
        }
    }

    /** The header's value, its name in any case; several values joined by commas, as HTTP allows; null when absent. */
    public String header(String name) {
        return header(headers, name);
    }

    /** {@link #header(String)} of headers not yet an answer (its head, while its body is still being read). */
    static String header(Map<String, List<String>> headers, String name) {
        return headers.entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase(name))
                .map(e -> String.join(",", e.getValue())).findFirst().orElse(null);
    }

    /**
     * The server's own time for the answer ({@code Server-Timing: app;dur=}), from lastseat's first look at
     * the request, where the deadline starts; the caller's clock when the header is missing.
     */
    public long serverMillis() {
        String timing = header("Server-Timing");
        return timing != null && timing.startsWith(APP_TIMING)
                ? Math.round(Double.parseDouble(timing.substring(APP_TIMING.length()))) : elapsedMillis;
    }

    /**
     * The server's own time for the answer in microseconds ({@code Server-Timing: app;dur=<ms>}, which
     * lastseat writes to a tenth of a millisecond), from lastseat's first look at the request; empty when the header is
     * missing, so that a figure built on the server's clock never silently takes the caller's.
     */
    public OptionalLong serverMicros() {
        String timing = header("Server-Timing");
        if (timing == null || !timing.startsWith(APP_TIMING)) {
            return OptionalLong.empty();
        }
        String millis = timing.substring(APP_TIMING.length()).split("[,;]", 2)[0].trim();
        try {
            return OptionalLong.of(Math.round(Double.parseDouble(millis) * 1000));
        } catch (NumberFormatException e) {
            return OptionalLong.empty();
        }
    }

    /** The problem's kind ({@code seats-taken} for {@code urn:lastseat:problem:seats-taken}); "" when the body is no JSON object. */
    public String type() {
        return body().startsWith("{") ? json().path("type").asText("").replace(PROBLEM, "") : "";
    }

    @Override
    public String toString() {
        return status + " " + body();
    }
}
