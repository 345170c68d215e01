package lastseat.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The plumbing under {@link LastseatClient} and {@link StubsClient}: one JDK {@link HttpClient}
 * (HTTP/1.1, a virtual thread per exchange, a connect timeout) and a timeout on every request, so
 * that a server that stopped answering ends a test or a drill with an error instead of hanging it.
 *
 * <p>Hazard: each one holds a selector thread, its pooled connections and an executor until it is
 * closed. A caller makes one per program or test class and shares it ({@code on(...)}); a buyer that needs
 * a connection of its own, as real buyers have (bin/bench's bursts), is better served by
 * {@link NewConnection}, whose cost is one socket; one made per buyer anyway is closed once its buyer is answered.
 */
final class Http implements AutoCloseable {
    private final HttpClient client;
    private final ExecutorService executor;
    private final Duration requestTimeout;

    Http(Duration connectTimeout, Duration requestTimeout) {
        // A burst of hundreds of buyers is hundreds of blocked exchanges: threads that cost nothing.
        this.executor = Executors.newVirtualThreadPerTaskExecutor();
        this.client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .executor(executor)
                .connectTimeout(connectTimeout)
                .build();
        this.requestTimeout = requestTimeout;
    }

    /**
     * Closes the connections and the selector thread once the exchanges under way are over (each ends
     * by its request timeout at the latest), then the executor.
     */
    @Override
    public void close() {
        client.close();
        executor.close();
    }

    HttpRequest.Builder request(URI base, String path) {
        return HttpRequest.newBuilder(base.resolve(path)).timeout(requestTimeout);
    }

    /**
     * Sends and times the request. A failed exchange (refused, reset, timed out) is an
     * {@link UncheckedIOException} naming the request, with the JDK's exception as its cause; an
     * interrupt is an {@link IllegalStateException} with the thread's interrupt flag set again.
     */
    Answer send(HttpRequest request) {
        long start = System.nanoTime();
        try {
            HttpResponse<byte[]> response = client.send(request, HttpResponse.BodyHandlers.ofByteArray());
            return new Answer(response.statusCode(), response.headers().map(), response.body(),
                              (System.nanoTime() - start) / 1_000_000);
        } catch (IOException e) {
            throw new UncheckedIOException(request.method() + " " + request.uri() + " failed: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
