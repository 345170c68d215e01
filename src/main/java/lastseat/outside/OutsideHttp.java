package lastseat.outside;

import io.helidon.http.HeaderNames;
import io.helidon.http.Method;
import io.helidon.metrics.api.Metrics;
import io.helidon.metrics.api.Tag;
import io.helidon.metrics.api.Timer;
import io.helidon.webclient.api.HttpClientResponse;
import io.helidon.webclient.api.Proxy;
import io.helidon.webclient.http1.Http1Client;
import io.helidon.webclient.http1.Http1ClientRequest;
import lastseat.config.OutsideConfig;
import lastseat.work.Deadline;
import lastseat.work.DeadlinePassed;
import lastseat.work.Scoped;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.SocketTimeoutException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * HTTP/1.1 to the fraud, tax, payment and email services on Helidon's WebClient: each call runs on a
 * virtual thread of its own, blocking on its socket, with no selector or executor threads between the
 * caller and the answer. Each call is bounded, and what comes back is capped in size.
 *
 * <p>Contract: every call ends within its timeout (capped by {@code outside.call-timeout}), or for a
 * call under a deadline within the deadline plus {@code outside.deadline-backstop}, because the call
 * runs as a subtask of {@link Scoped#within} that is interrupted at that bound; an interrupt of the
 * caller (its scope's deadline, a sibling's failure) reaches the subtask the same way. A virtual
 * thread interrupted in a socket's read or write closes the socket, so the exchange really stops.
 * The caller's own thread is never interrupted by the bound, so no stray interrupt outlives a call.
 *
 * <p>Hazard: Helidon's connection cache watches each idle connection and declares it dead once it has
 * been idle for the socket's read timeout, and a connection taken from the cache at that moment fails
 * after the request was written — on a payment, an answer lost. So the socket's read timeout is
 * {@code outside.idle-timeout}, far longer than any call (the configuration checks it), and never set
 * per call: the interrupt bounds each call. The race is not gone but moved to that idle time, which a
 * provider's own keep-alive limit (usually a minute or less) comes to first; a provider that keeps
 * idle connections longer meets it there, and its answer is then "unknown", never "not sent".
 *
 * <p>Failures are told in the words of {@code java.net.http}, which the callers decide on: {@link
 * ConnectException} or {@link HttpConnectTimeoutException} only for a failure thrown while the connection
 * was being opened (resolving, connecting), which Helidon finishes before it writes a byte of the request
 * — told by where it was thrown, not by its type; {@link HttpTimeoutException} when the bound passed; any
 * other {@link IOException} when the exchange failed after it may have been sent.
 *
 * <p>Known limits of Helidon 4.5.0, left as they are: a DNS lookup is not stopped by an interrupt (the
 * default base URL is an address, and with no proxy none is made for it); a connection whose failure
 * came before any answer is left to the garbage collector rather than closed; and an answer delimited
 * by the connection's close (neither Content-Length nor chunked) that was cut short lets the connection
 * back into the cache, where the next call fails on it — as "unknown", never as "not sent".
 */
public final class OutsideHttp implements Outside {
    private static final int WRITE_BUFFER_BYTES = 1024;

    private final Http1Client client;
    private final OutsideConfig config;
    /** The call timers, looked up once per (service, outcome): the registry's lookup builds an id every time. */
    private final Map<String, Timer> timers = new ConcurrentHashMap<>();

    public OutsideHttp(OutsideConfig config) {
        this.config = config;
        this.client = Http1Client.builder()
                .connectTimeout(config.connectTimeout())
                .readTimeout(config.idleTimeout())
                .followRedirects(false)
                .sendExpectContinue(false)
                // The system's proxy (Helidon's default) asks the resolver for the address's name on every new
                // connection, a lookup no interrupt stops; the outside services are reached directly.
                .proxy(Proxy.noProxy())
                // Our own cache, so that only connections made with the read timeout above are reused.
                .shareConnectionCache(false)
                .connectionCacheSize(config.maxIdleConnections())
                // Each connection keeps its write buffer while it is open or cached, one per call in flight (4 KB
                // by default); a request here is a few hundred bytes, and a longer one bypasses the buffer in one write.
                .writeBufferSize(WRITE_BUFFER_BYTES)
                .build();
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
        return send(Method.POST, path, json.getBytes(StandardCharsets.UTF_8), headers, timeout);
    }

    /** Capped further by the configured call timeout. */
    @Override
    public Answer get(String pathAndQuery, Duration timeout) throws IOException, InterruptedException {
        return send(Method.GET, pathAndQuery, null, Map.of(), timeout);
    }

    /**
     * Sends and times the call: {@code lastseat.outside{service, outcome}} in seconds, the service being
     * the path's first segment (fraud, tax, payments, emails, refunds: configured, so few) and the outcome
     * the status's class, {@code failed} (reset, refused, timed out) or {@code cancelled} (interrupted).
     */
    private Answer send(Method method, String pathAndQuery, byte[] body, Map<String, String> headers, Duration timeout)
            throws IOException, InterruptedException {
        long start = System.nanoTime();
        Duration bound = capped(timeout);
        String service = service(pathAndQuery);
        String outcome = "failed";
        try {
            Answer answer = Scoped.within("outside-" + service, Deadline.after(bound, start),
                                          () -> exchange(method, pathAndQuery, body, headers));
            outcome = answer.status() / 100 + "xx";
            return answer;
        } catch (DeadlinePassed e) {
            throw new HttpTimeoutException("no answer within " + bound.toMillis() + " ms");
        } catch (Scoped.SubtaskFailed e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            if (e.getCause() instanceof InterruptedException interrupted) {
                outcome = "cancelled";
                throw interrupted;
            }
            throw e;
        } catch (InterruptedException e) {
            outcome = "cancelled";
            throw e;
        } finally {
            String ended = outcome;
            timers.computeIfAbsent(service + " " + ended, key -> Metrics.globalRegistry().getOrCreate(Timer.builder("lastseat.outside")
                            .description("Calls to the outside services, by service and outcome")
                            .tags(List.of(Tag.create("service", service), Tag.create("outcome", ended)))))
                    .record(Duration.ofNanos(System.nanoTime() - start));
        }
    }

    /** One exchange, on the bound's subtask: Helidon's unchecked failures become the words the callers decide on. */
    private Answer exchange(Method method, String pathAndQuery, byte[] body, Map<String, String> headers)
            throws IOException, InterruptedException {
        // Appended, not resolved: a base URL's own path stays in front.
        Http1ClientRequest request = client.method(method).uri(URI.create(config.baseUrl() + pathAndQuery))
                .header(HeaderNames.ACCEPT, "application/json");
        if (body != null) {
            request.header(HeaderNames.CONTENT_TYPE, "application/json");
        }
        headers.forEach((name, value) -> request.header(HeaderNames.create(name), value));
        try (HttpClientResponse response = body == null ? request.request() : request.submit(body)) {
            return new Answer(response.status().code(), read(response.inputStream()));
        } catch (RuntimeException e) {
            // Helidon reports its I/O failures unchecked, and so a host it could not resolve, a connection that
            // ended mid-answer, or a watcher that gave up on a connection.
            throw told(e);
        }
    }

    private static IOException told(RuntimeException failure) throws InterruptedException {
        if (Thread.currentThread().isInterrupted()) {
            throw new InterruptedException("the call was interrupted: " + failure);
        }
        Throwable cause = failure instanceof UncheckedIOException unchecked ? unchecked.getCause() : failure;
        if (beforeTheRequest(failure)) {
            return cause instanceof SocketTimeoutException
                    ? new HttpConnectTimeoutException("no connection within the connect timeout")
                    : (IOException) new ConnectException("no connection: " + cause.getMessage()).initCause(cause);
        }
        // Past the connect the request may have left: never the words that say it did not.
        return cause instanceof IOException io && !(io instanceof ConnectException) && !(io instanceof HttpTimeoutException)
                ? io : new IOException("the exchange failed: " + cause, cause);
    }

    /**
     * Whether the failure came from opening the connection (resolving, connecting, a TLS handshake),
     * which Helidon finishes before it writes a byte of the request: told by where it was thrown, not by
     * its type, since a {@link SocketTimeoutException} or a Helidon runtime exception can come from either.
     */
    private static boolean beforeTheRequest(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            for (StackTraceElement frame : t.getStackTrace()) {
                if (frame.getClassName().equals("io.helidon.webclient.api.TcpClientConnection") && frame.getMethodName().equals("connect")) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The body, or a failure when it is longer than the configured cap: an answer never fills memory. */
    private String read(InputStream in) throws IOException {
        byte[] bytes = in.readNBytes(config.maxResponseBytes() + 1);
        if (bytes.length > config.maxResponseBytes()) {
            throw new IOException("response body larger than " + config.maxResponseBytes() + " bytes");
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static String service(String path) {
        String[] segments = path.split("[/?]");
        return segments.length > 1 && !segments[1].isEmpty() ? segments[1] : "root";
    }

    private Duration capped(Duration timeout) {
        Duration capped = timeout.compareTo(config.callTimeout()) < 0 ? timeout : config.callTimeout();
        return capped.isZero() || capped.isNegative() ? Duration.ofMillis(1) : capped;
    }
}
