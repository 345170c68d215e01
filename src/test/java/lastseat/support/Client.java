package lastseat.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.stream.Collectors;

/** A buyer's HTTP client for tests: real requests to the real server. */
public final class Client {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final String base;
    private final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .executor(Executors.newVirtualThreadPerTaskExecutor())
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    Client(String base) {
        this.base = base;
    }

    public record Answer(int status, Map<String, String> headers, byte[] raw, long elapsedMillis) {
        public String body() {
            return new String(raw, java.nio.charset.StandardCharsets.UTF_8);
        }

        public JsonNode json() {
            try {
                return JSON.readTree(raw);
            } catch (IOException e) {
                throw new UncheckedIOException("not JSON: " + body(), e);
            }
        }

        public String header(String name) {
            return headers.get(name.toLowerCase());
        }

        /**
         * The server's own time for the answer ({@code Server-Timing: app;dur=}), from the handler's
         * start where the deadline starts; the client's clock when the header is missing.
         */
        public long serverMillis() {
            String timing = header("Server-Timing");
            return timing != null && timing.startsWith("app;dur=")
                    ? Math.round(Double.parseDouble(timing.substring("app;dur=".length()))) : elapsedMillis;
        }

        @Override
        public String toString() {
            return status + " " + body();
        }
    }

    public static String purchaseBody(String eventId, String... seats) {
        String list = Arrays.stream(seats).map(s -> "\"" + s + "\"").collect(Collectors.joining(","));
        return "{\"eventId\":\"" + eventId + "\",\"seats\":[" + list + "],"
               + "\"buyer\":{\"id\":\"ada\",\"email\":\"ada@example.com\"},\"paymentToken\":\"tok_ok\"}";
    }

    public static String buyerBody(String eventId, String buyerId, String token, String... seats) {
        String list = Arrays.stream(seats).map(s -> "\"" + s + "\"").collect(Collectors.joining(","));
        return "{\"eventId\":\"" + eventId + "\",\"seats\":[" + list + "],"
               + "\"buyer\":{\"id\":\"" + buyerId + "\",\"email\":\"" + buyerId + "@example.com\"},\"paymentToken\":\"" + token + "\"}";
    }

    public Answer purchase(String key, String eventId, String... seats) {
        return post("/purchases", key, purchaseBody(eventId, seats));
    }

    public Answer post(String path, String idempotencyKey, String body) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path))
                .timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (idempotencyKey != null) {
            request.header("Idempotency-Key", idempotencyKey);
        }
        return send(request.build());
    }

    public Answer postRaw(String path, Map<String, String> headers, byte[] body) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path))
                .timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        headers.forEach(request::header);
        return send(request.build());
    }

    public Answer get(String path) {
        return send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30)).GET().build());
    }

    public JsonNode event(String id) {
        Answer answer = get("/events/" + id);
        if (answer.status() != 200) {
            throw new AssertionError("GET /events/" + id + " answered " + answer);
        }
        return answer.json();
    }

    public JsonNode createEvent(int capacity) {
        return created(post("/events", null,
                "{\"name\":\"Test\",\"capacity\":" + capacity + ",\"price\":\"40.00\",\"currency\":\"EUR\"}"));
    }

    public JsonNode createEvent(String... seats) {
        String list = Arrays.stream(seats).map(s -> "\"" + s + "\"").collect(Collectors.joining(","));
        return created(post("/events", null,
                "{\"name\":\"Test\",\"seats\":[" + list + "],\"price\":\"40.00\",\"currency\":\"EUR\"}"));
    }

    private static JsonNode created(Answer answer) {
        if (answer.status() != 201) {
            throw new AssertionError("POST /events answered " + answer);
        }
        return answer.json();
    }

    private Answer send(HttpRequest request) {
        long start = System.nanoTime();
        try {
            HttpResponse<byte[]> response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
            long elapsed = (System.nanoTime() - start) / 1_000_000;
            Map<String, String> headers = response.headers().map().entrySet().stream()
                    .collect(Collectors.toMap(e -> e.getKey().toLowerCase(), e -> String.join(",", e.getValue()), (a, b) -> a));
            return new Answer(response.statusCode(), headers, response.body(), elapsed);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
