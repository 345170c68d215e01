package lastseat.testkit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The bursts' client against a socket that answers exactly the bytes each test gives it: a connection of
 * its own for every exchange, closed by the client once the answer is read, and an answer cut short or
 * never sent ending as a failed exchange.
 */
class NewConnectionTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    private ServerSocket server;
    private ExecutorService threads;
    private final List<String> requests = new CopyOnWriteArrayList<>();

    @BeforeEach
    void listen() throws IOException {
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        threads = Executors.newVirtualThreadPerTaskExecutor();
    }

    @AfterEach
    void close() throws Exception {
        server.close();
        threads.shutdownNow();
        assertThat(threads.awaitTermination(5, TimeUnit.SECONDS)).as("the test server's threads ended").isTrue();
    }

    private URI base() {
        return URI.create("http://127.0.0.1:" + server.getLocalPort());
    }

    /**
     * Serves {@code connections} connections one after the other: reads each request's head and body, answers
     * {@code answer(request)} (null: answers nothing), then tells whether the client closed the connection
     * within five seconds.
     */
    private Future<List<Boolean>> serve(int connections, Function<String, String> answer) {
        return serve(connections, answer, false);
    }

    /** {@link #serve(int, Function)}, the server closing each connection itself right after its answer when {@code hangUp}. */
    private Future<List<Boolean>> serve(int connections, Function<String, String> answer, boolean hangUp) {
        return threads.submit(() -> {
            List<Boolean> closedByClient = new CopyOnWriteArrayList<>();
            for (int i = 0; i < connections; i++) {
                try (Socket socket = server.accept()) {
                    String request = readRequest(socket.getInputStream());
                    requests.add(request);
                    String reply = answer.apply(request);
                    if (reply == null) {
                        Thread.sleep(Duration.ofSeconds(30));
                    }
                    socket.getOutputStream().write(reply.getBytes(StandardCharsets.ISO_8859_1));
                    socket.getOutputStream().flush();
                    if (hangUp) {
                        continue;
                    }
                    socket.setSoTimeout(5_000);
                    closedByClient.add(socket.getInputStream().read() == -1);
                }
            }
            return closedByClient;
        });
    }

    private static String readRequest(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("the request ended in its head");
            }
            head.write(b);
        }
        String text = head.toString(StandardCharsets.ISO_8859_1);
        int length = text.lines().filter(line -> line.toLowerCase().startsWith("content-length:"))
                .mapToInt(line -> Integer.parseInt(line.substring(line.indexOf(':') + 1).trim())).findFirst().orElse(0);
        return text + new String(in.readNBytes(length), StandardCharsets.UTF_8);
    }

    private static Answer post(URI base, Duration timeout) {
        return NewConnection.exchange(base, "POST", "/purchases",
                                      Map.of("Content-Type", "application/json", "Idempotency-Key", "k-1"),
                                      "{\"quantity\":1}".getBytes(StandardCharsets.UTF_8), timeout);
    }

    @Test
    void eachExchangeOpensAConnectionOfItsOwnSendsTheRequestAsGivenAndClosesItOnceAnswered() throws Exception {
        String body = "{\"status\":409,\"type\":\"sold-out\"}";
        Future<List<Boolean>> served = serve(2, request -> "HTTP/1.1 409 Conflict\r\nContent-Type: application/problem+json\r\n"
                                                            + "Server-Timing: app;dur=12.5\r\nContent-Length: " + body.length()
                                                            + "\r\n\r\n" + body);

        Answer first = post(base(), TIMEOUT);
        Answer second = post(base(), TIMEOUT);

        assertThat(served.get(10, TimeUnit.SECONDS)).as("each connection closed by the client after its answer").containsExactly(true, true);
        assertThat(requests).hasSize(2).allSatisfy(request -> assertThat(request)
                .startsWith("POST /purchases HTTP/1.1\r\n")
                .contains("Host: 127.0.0.1:" + server.getLocalPort() + "\r\n", "Content-Type: application/json\r\n",
                          "Idempotency-Key: k-1\r\n", "Content-Length: 14\r\n", "Connection: close\r\n")
                .endsWith("\r\n\r\n{\"quantity\":1}"));
        for (Answer answer : List.of(first, second)) {
            assertThat(answer.status()).isEqualTo(409);
            assertThat(answer.body()).isEqualTo(body);
            assertThat(answer.header("content-type")).isEqualTo("application/problem+json");
            assertThat(answer.serverMicros()).isEqualTo(OptionalLong.of(12_500));
        }
    }

    @Test
    void aChunkedAnswerIsReadWhole() throws Exception {
        Future<List<Boolean>> served = serve(1, request -> "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                                                           + "5\r\n{\"id\"\r\nc;ext=1\r\n:\"p-1\",\"x\":1\r\n1\r\n}\r\n0\r\n\r\n");

        Answer answer = post(base(), TIMEOUT);

        assertThat(answer.status()).isEqualTo(201);
        assertThat(answer.body()).isEqualTo("{\"id\":\"p-1\",\"x\":1}");
        assertThat(served.get(10, TimeUnit.SECONDS)).containsExactly(true);
    }

    @Test
    void anAnswerCutShortIsAFailedExchangeNotAShorterBody() {
        serve(1, request -> "HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{\"id\":", true);

        assertThatThrownBy(() -> NewConnection.exchange(base(), "GET", "/x", Map.of(), null, TIMEOUT))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining("GET http://127.0.0.1:")
                .hasMessageContaining("closed 94 bytes before the answer's end");
        assertThat(requests).hasSize(1);
    }

    @Test
    void aServerThatNeverAnswersEndsTheExchangeAtItsTimeout() {
        serve(1, request -> null);

        long start = System.nanoTime();
        assertThatThrownBy(() -> post(base(), Duration.ofMillis(300))).isInstanceOf(UncheckedIOException.class);
        long tookMillis = (System.nanoTime() - start) / 1_000_000;

        assertThat(tookMillis).as("ended by the 300 ms timeout, with slack for a busy machine").isBetween(250L, 3_000L);
        assertThat(requests).hasSize(1);
    }

    @Test
    void somethingThatIsNotHttpIsAFailedExchange() {
        serve(2, request -> requests.size() == 1 ? "SSH-2.0-OpenSSH_9.6\r\n\r\n"
                                                 : "HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n{}", true);

        assertThatThrownBy(() -> post(base(), TIMEOUT)).isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining("not an HTTP/1.x status line");
        assertThatThrownBy(() -> post(base(), TIMEOUT)).isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining("not a Content-Length: lots");
    }
}
