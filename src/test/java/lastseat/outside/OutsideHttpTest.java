package lastseat.outside;

import io.helidon.http.HeaderNames;
import io.helidon.webclient.api.HttpClientResponse;
import io.helidon.webclient.http1.Http1Client;
import lastseat.config.OutsideConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Real-parts tier: {@link OutsideHttp} against a provider made of a bare server socket, which sees what
 * WireMock hides — whether a cancelled call's connection was really closed, and how many connections
 * and requests arrived. What it guards: a call ends at its bound and stops its exchange; an interrupt
 * stops it at once; failures are told in the words the payment decides on; and a connection left idle
 * after calls with short bounds is reused without losing an answer, which Helidon's idle watcher made
 * fail when the socket's read timeout was set per call (the unsafe arm shows it); no more idle connections
 * are kept than {@code outside.max-idle-connections}; a request longer than the write buffer arrives whole.
 */
class OutsideHttpTest {
    /** Room for a busy two-core machine; the calls it bounds would otherwise wait seconds or for ever. */
    private static final Duration SLACK = Duration.ofSeconds(2);
    private final Provider provider = new Provider();

    @AfterEach
    void close() throws IOException {
        provider.close();
        assertThat(provider.handlers.get()).as("every connection's handler ended").isZero();
    }

    @Test
    void aCallSlowerThanItsBoundEndsAtTheBoundAndClosesItsConnection() throws Exception {
        provider.mode = Mode.SILENT;
        OutsideHttp http = http();

        long start = System.nanoTime();
        assertThatThrownBy(() -> http.get("/payments?idempotencyKey=k", Duration.ofMillis(300)))
                .isInstanceOf(HttpTimeoutException.class);
        Duration took = Duration.ofNanos(System.nanoTime() - start);

        assertThat(took).as("ended at its bound").isBetween(Duration.ofMillis(300), Duration.ofMillis(300).plus(SLACK));
        assertThat(provider.requests.get()).as("the request reached the provider").isEqualTo(1);
        assertThat(provider.closedByClient.await(SLACK.toMillis(), TimeUnit.MILLISECONDS))
                .as("the exchange was stopped: its connection closed, not left waiting for the answer").isTrue();
    }

    @Test
    void anInterruptedCallerStopsItsCallAtOnce() throws Exception {
        provider.mode = Mode.SILENT;
        OutsideHttp http = http();
        AtomicReference<Throwable> ended = new AtomicReference<>();
        Thread caller = Thread.ofVirtual().start(() -> {
            try {
                http.post("/fraud/checks", "{}", Map.of(), Duration.ofSeconds(5));
            } catch (Throwable e) {
                ended.set(e);
            }
        });
        assertThat(provider.arrived.await(5, TimeUnit.SECONDS)).as("the request reached the provider").isTrue();

        long start = System.nanoTime();
        caller.interrupt();
        caller.join(Duration.ofSeconds(5));

        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("stopped at once").isLessThan(SLACK);
        assertThat(ended.get()).isInstanceOf(InterruptedException.class);
        assertThat(provider.closedByClient.await(SLACK.toMillis(), TimeUnit.MILLISECONDS))
                .as("its connection closed").isTrue();
    }

    @Test
    void aRefusedConnectionIsToldAsOneSoNothingWasSent() throws Exception {
        int closedPort;
        try (ServerSocket gone = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = gone.getLocalPort();
        }
        OutsideHttp http = new OutsideHttp(config("http://127.0.0.1:" + closedPort));

        assertThatThrownBy(() -> http.post("/payments", "{}", Map.of("Idempotency-Key", "k"), Duration.ofSeconds(1)))
                .isInstanceOf(ConnectException.class);
    }

    @Test
    void aFailureAfterTheRequestWasWrittenIsNeverToldAsNotSent() throws Exception {
        OutsideHttp http = http();
        for (Mode fault : List.of(Mode.RESET, Mode.GARBAGE, Mode.CLOSE)) {
            // On a new connection, then on one taken from the cache after an answer.
            for (boolean cached : List.of(false, true)) {
                if (cached) {
                    provider.mode = Mode.ANSWER;
                    assertThat(http.post("/payments", "{}", Map.of(), Duration.ofSeconds(2)).status()).isEqualTo(200);
                }
                provider.mode = fault;
                int before = provider.requests.get();
                int connections = provider.connections.get();

                assertThatThrownBy(() -> http.post("/payments", "{}", Map.of("Idempotency-Key", "k"), Duration.ofSeconds(2)))
                        .as(fault + (cached ? " on a cached connection" : " on a new connection"))
                        .isInstanceOf(IOException.class)
                        .isNotInstanceOfAny(ConnectException.class, HttpTimeoutException.class);
                assertThat(provider.requests.get()).as("the request reached the provider").isEqualTo(before + 1);
                assertThat(provider.connections.get()).as(cached ? "sent on the cached connection" : "sent on a new connection")
                        .isEqualTo(cached ? connections : connections + 1);
            }
        }
    }

    @Test
    void anAnswerLargerThanTheCapFailsInsteadOfFillingMemory() throws Exception {
        provider.mode = Mode.LARGE;
        OutsideHttp http = http();

        assertThatThrownBy(() -> http.get("/payments?idempotencyKey=k", Duration.ofSeconds(1)))
                .isInstanceOf(IOException.class).hasMessageContaining("larger than 256 bytes");
        assertThat(provider.requests.get()).isEqualTo(1);
    }

    @Test
    void aConnectionIdleAfterShortBoundsIsReusedWithoutLosingAnAnswer() throws Exception {
        // The pauses are the subject here: how long a connection idles before it is taken again.
        List<Duration> idle = new ArrayList<>();
        for (int ms = 280; ms <= 420; ms += 15) {
            idle.add(Duration.ofMillis(ms));
        }
        Duration bound = Duration.ofMillis(400);

        // Unsafe: each call's bound as the socket's read timeout. Helidon's watcher reads an idle connection
        // in 101 ms slices and fails it once it has idled that long (404 ms here); a connection taken from the
        // cache before then, whose answer comes after it, fails after its request was written: seven of
        // these pauses (310-400 ms) fall in that window.
        try (Provider unsafeProvider = new Provider()) {
            unsafeProvider.answerAfter = Duration.ofMillis(100);
            Http1Client unsafe = Http1Client.builder().shareConnectionCache(false).connectTimeout(Duration.ofSeconds(1)).build();
            int answered = 0;
            for (Duration pause : idle) {
                try (HttpClientResponse response = unsafe.get("http://127.0.0.1:" + unsafeProvider.port() + "/fraud/checks")
                        .readTimeout(bound).header(HeaderNames.ACCEPT, "application/json").request()) {
                    response.inputStream().readAllBytes();
                    answered++;
                } catch (RuntimeException | IOException e) {
                    // the answer lost
                }
                Thread.sleep(pause);
            }
            unsafe.closeResource();
            assertThat(unsafeProvider.requests.get() - answered)
                    .as("requests the provider got whose answers were lost, with the bound as the read timeout").isPositive();
        }

        provider.answerAfter = Duration.ofMillis(50);
        OutsideHttp http = http();
        for (int i = 0; i < idle.size(); i++) {
            Outside.Answer answer = http.post("/fraud/checks", "{}", Map.of(), bound);
            assertThat(answer.status()).isEqualTo(200);
            assertThat(answer.body()).as("its own answer, not an earlier one's").isEqualTo("{\"request\":" + (i + 1) + "}");
            Thread.sleep(idle.get(i));
        }
        assertThat(provider.requests.get()).isEqualTo(idle.size());
        assertThat(provider.connections.get()).as("one connection, reused after every pause").isEqualTo(1);
    }

    @Test
    void connectionsPastTheIdleLimitAreClosedWhenTheirCallsEndAndOnlyTheKeptOnesAreReused() throws Exception {
        // Unsafe arm: Helidon's own default (256) keeps all ten open after a round, each watched while idle.
        try (Provider generous = new Provider()) {
            OutsideHttp http = new OutsideHttp(config("http://127.0.0.1:" + generous.port(), 256));
            callTogether(http, generous, 10);
            callTogether(http, generous, 10);
            assertThat(generous.connections.get()).as("the second round reused the first round's ten").isEqualTo(10);
            assertThat(generous.handlers.get()).as("all ten still open").isEqualTo(10);
        }

        OutsideHttp http = new OutsideHttp(config("http://127.0.0.1:" + provider.port(), 3));
        callTogether(http, provider, 10);
        assertThat(openAtMost(3)).as("seven closed by the client once their calls ended").isTrue();
        callTogether(http, provider, 10);
        assertThat(provider.connections.get()).as("three kept and reused, seven made anew").isEqualTo(17);
        assertThat(openAtMost(3)).isTrue();
        assertThat(provider.requests.get()).isEqualTo(20);
    }

    @Test
    void aRequestLongerThanTheWriteBufferArrivesWhole() throws Exception {
        String body = "{\"pad\":\"" + "x".repeat(5000) + "\"}";

        Outside.Answer answer = http().post("/emails", body, Map.of("Idempotency-Key", "long"), Duration.ofSeconds(5));

        assertThat(answer.status()).isEqualTo(200);
        assertThat(provider.lastBody.get()).isEqualTo(body);
        assertThat(provider.connections.get()).isEqualTo(1);
    }

    /** {@code n} calls released together, each answered only once all have arrived. */
    private static void callTogether(OutsideHttp http, Provider to, int n) throws Exception {
        to.gate = new CountDownLatch(n);
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> callers = new ArrayList<>();
        List<Integer> statuses = new java.util.concurrent.CopyOnWriteArrayList<>();
        for (int i = 0; i < n; i++) {
            callers.add(Thread.ofVirtual().start(() -> {
                try {
                    start.await();
                    statuses.add(http.post("/fraud/checks", "{}", Map.of(), Duration.ofSeconds(5)).status());
                } catch (IOException | InterruptedException | RuntimeException e) {
                    statuses.add(-1);
                }
            }));
        }
        start.countDown();
        for (Thread caller : callers) {
            assertThat(caller.join(Duration.ofSeconds(10))).isTrue();
        }
        assertThat(statuses).hasSize(n).containsOnly(200);
    }

    /** Whether the provider's open connections fall to {@code most} within the slack: a client's close reaches it a moment later. */
    private boolean openAtMost(int most) throws InterruptedException {
        long until = System.nanoTime() + SLACK.toNanos();
        while (provider.handlers.get() > most && System.nanoTime() < until) {
            Thread.sleep(10);
        }
        return provider.handlers.get() <= most;
    }

    private OutsideHttp http() {
        return new OutsideHttp(config("http://127.0.0.1:" + provider.port()));
    }

    private static OutsideConfig config(String baseUrl) {
        return config(baseUrl, 32);
    }

    private static OutsideConfig config(String baseUrl, int maxIdleConnections) {
        return new OutsideConfig(baseUrl, Duration.ofSeconds(1), Duration.ofSeconds(5), Duration.ofMillis(100), 256,
                                 Duration.ofMinutes(10), maxIdleConnections);
    }

    enum Mode { ANSWER, SILENT, LARGE, RESET, GARBAGE, CLOSE }

    /** A provider on a bare server socket: HTTP/1.1 keep-alive, one virtual thread per connection. */
    static final class Provider implements AutoCloseable {
        final AtomicInteger connections = new AtomicInteger();
        final AtomicInteger requests = new AtomicInteger();
        final AtomicInteger handlers = new AtomicInteger();
        final CountDownLatch arrived = new CountDownLatch(1);
        final CountDownLatch closedByClient = new CountDownLatch(1);
        volatile Mode mode = Mode.ANSWER;
        volatile Duration answerAfter = Duration.ZERO;
        volatile CountDownLatch gate;
        final AtomicReference<String> lastBody = new AtomicReference<>();
        private final ServerSocket server;
        private final List<Socket> accepted = new java.util.concurrent.CopyOnWriteArrayList<>();
        private final Thread acceptor;

        Provider() {
            try {
                server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            acceptor = Thread.ofVirtual().start(() -> {
                while (!server.isClosed()) {
                    try {
                        Socket socket = server.accept();
                        accepted.add(socket);
                        connections.incrementAndGet();
                        handlers.incrementAndGet();
                        Thread.ofVirtual().start(() -> serve(socket));
                    } catch (IOException e) {
                        return;
                    }
                }
            });
        }

        int port() {
            return server.getLocalPort();
        }

        private void serve(Socket socket) {
            try (socket; InputStream in = socket.getInputStream(); OutputStream out = socket.getOutputStream()) {
                while (true) {
                    int length = head(in);
                    if (length < 0) {
                        closedByClient.countDown();
                        return;
                    }
                    lastBody.set(new String(in.readNBytes(length), StandardCharsets.UTF_8));
                    int request = requests.incrementAndGet();
                    arrived.countDown();
                    switch (mode) {
                        case RESET -> {
                            // An RST instead of an answer.
                            socket.setSoLinger(true, 0);
                            return;
                        }
                        case GARBAGE -> {
                            out.write("not http at all\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                            out.flush();
                            return;
                        }
                        case CLOSE -> {
                            return;
                        }
                        case SILENT -> {
                            // No answer: wait for the client to give up and close.
                            if (in.read() < 0) {
                                closedByClient.countDown();
                            }
                            return;
                        }
                        case LARGE -> answer(out, "{\"pad\":\"" + "x".repeat(1000) + "\"}");
                        case ANSWER -> {
                            Thread.sleep(answerAfter);
                            CountDownLatch together = gate;
                            if (together != null) {
                                // No answer until every call of the round has arrived: each holds a connection of its own.
                                together.countDown();
                                together.await(10, TimeUnit.SECONDS);
                            }
                            answer(out, "{\"request\":" + request + "}");
                        }
                    }
                }
            } catch (IOException e) {
                closedByClient.countDown();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                handlers.decrementAndGet();
            }
        }

        /** Reads a request's head; its Content-Length, or -1 when the client closed the connection. */
        private static int head(InputStream in) throws IOException {
            ByteArrayOutputStream line = new ByteArrayOutputStream();
            int length = 0;
            boolean any = false;
            int b;
            while ((b = in.read()) >= 0) {
                any = true;
                if (b != '\n') {
                    line.write(b);
                    continue;
                }
                String text = line.toString(StandardCharsets.ISO_8859_1).strip();
                line.reset();
                if (text.isEmpty()) {
                    return length;
                }
                if (text.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
                    length = Integer.parseInt(text.substring("content-length:".length()).strip());
                }
            }
            if (any) {
                throw new IOException("the connection ended inside a request's head");
            }
            return -1;
        }

        private static void answer(OutputStream out, String body) throws IOException {
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + bytes.length + "\r\n\r\n")
                              .getBytes(StandardCharsets.ISO_8859_1));
            out.write(bytes);
            out.flush();
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (Socket socket : accepted) {
                socket.close();
            }
            try {
                acceptor.join(Duration.ofSeconds(5));
                long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
                while (handlers.get() > 0 && System.nanoTime() < until) {
                    Thread.sleep(10);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
