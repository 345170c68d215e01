package lastseat.outside;

import io.helidon.metrics.api.Metrics;
import io.helidon.metrics.api.Tag;
import io.helidon.metrics.api.Timer;
import lastseat.config.OutsideConfig;
import lastseat.work.Deadline;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * HTTP/1.1 to the fraud, tax, payment and email services, with a total timeout per request and a
 * cap on the size of what comes back.
 *
 * <p>Cancellation: {@link HttpClient#send} cancels the exchange when its thread is interrupted, so
 * a subtask interrupted by its scope stops its call instead of waiting for the answer.
 */
public final class OutsideHttp implements Outside {
    private final HttpClient client;
    private final OutsideConfig config;

    public OutsideHttp(OutsideConfig config) {
        this.config = config;
        this.client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(config.connectTimeout())
                .followRedirects(HttpClient.Redirect.NEVER)
                .build();
    }

    private URI uri(String path) {
        return URI.create(config.baseUrl() + path);
    }

    /** Within the deadline; the deadline's scope interrupts the call first (see {@link OutsideConfig} for the backstop). */
    @Override
    public Answer post(String path, String json, Map<String, String> headers, Deadline deadline)
            throws IOException, InterruptedException {
        return post(path, json, headers, deadline.remaining().plus(config.deadlineBackstop()));
    }

    /** Capped further by the configured call timeout. */
    @Override
    public Answer post(String path, String json, Map<String, String> headers, Duration timeout)
            throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri(path))
                .timeout(capped(timeout))
                .header("Content-Type", "application/json")
                .header("Accept", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json, StandardCharsets.UTF_8));
        headers.forEach(request::header);
        return send(request.build());
    }

    /** Capped further by the configured call timeout. */
    @Override
    public Answer get(String pathAndQuery, Duration timeout) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(uri(pathAndQuery)).timeout(capped(timeout)).header("Accept", "application/json")
                            .GET().build());
    }

    /**
     * Sends and times the call: {@code lastseat.outside{service, outcome}} in seconds, the service being
     * the path's first segment (fraud, tax, payments, emails, refunds: configured, so few) and the outcome
     * the status's class, {@code failed} (reset, refused, timed out) or {@code cancelled} (interrupted).
     */
    private Answer send(HttpRequest request) throws IOException, InterruptedException {
        long start = System.nanoTime();
        String outcome = "failed";
        try {
            HttpResponse<String> response = client.send(request, info -> new Bounded(config.maxResponseBytes()));
            outcome = response.statusCode() / 100 + "xx";
            return new Answer(response.statusCode(), response.body());
        } catch (InterruptedException e) {
            outcome = "cancelled";
            throw e;
        } finally {
            String service = service(request.uri().getPath());
            String ended = outcome;
            timers.computeIfAbsent(service + " " + ended, key -> Metrics.globalRegistry().getOrCreate(Timer.builder("lastseat.outside")
                            .description("Calls to the outside services, by service and outcome")
                            .tags(List.of(Tag.create("service", service), Tag.create("outcome", ended)))))
                    .record(Duration.ofNanos(System.nanoTime() - start));
        }
    }

    /** The call timers, looked up once per (service, outcome): the registry's lookup builds an id every time. */
    private final java.util.Map<String, Timer> timers = new java.util.concurrent.ConcurrentHashMap<>();

    private static String service(String path) {
        String[] segments = path.split("/");
        return segments.length > 1 && !segments[1].isEmpty() ? segments[1] : "root";
    }

    private Duration capped(Duration timeout) {
        Duration capped = timeout.compareTo(config.callTimeout()) < 0 ? timeout : config.callTimeout();
        return capped.isZero() || capped.isNegative() ? Duration.ofMillis(1) : capped;
    }

    /** Collects at most {@code max} bytes of a body; a longer one fails the call instead of filling memory. */
    private static final class Bounded implements HttpResponse.BodySubscriber<String> {
        private final int max;
        private final CompletableFuture<String> result = new CompletableFuture<>();
        private final java.io.ByteArrayOutputStream buffer = new java.io.ByteArrayOutputStream();
        private Flow.Subscription subscription;

        Bounded(int max) {
            this.max = max;
        }

        @Override
        public CompletionStage<String> getBody() {
            return result;
        }

        @Override
        public void onSubscribe(Flow.Subscription subscription) {
            this.subscription = subscription;
            subscription.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(List<ByteBuffer> items) {
            for (ByteBuffer item : items) {
                if (buffer.size() + item.remaining() > max) {
                    subscription.cancel();
                    result.completeExceptionally(new IOException("response body larger than " + max + " bytes"));
                    return;
                }
                byte[] bytes = new byte[item.remaining()];
                item.get(bytes);
                buffer.writeBytes(bytes);
            }
        }

        @Override
        public void onError(Throwable throwable) {
            result.completeExceptionally(throwable);
        }

        @Override
        public void onComplete() {
            result.complete(buffer.toString(StandardCharsets.UTF_8));
        }
    }
}
