package lastseat.drills;

import com.sun.net.httpserver.HttpServer;
import lastseat.config.OutsideConfig;
import lastseat.outside.Outside;
import lastseat.outside.OutsideHttp;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpConnectTimeoutException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The fault proxy's timed-out door, as lastseat's HTTP client meets it: its own {@link OutsideHttp},
 * lastseat's connect timeout (250 ms). While the door is shut, a POST fails with
 * {@link HttpConnectTimeoutException} after the connect timeout — neither refused nor reset — and
 * nothing reaches the service behind the proxy, which is what lets PaymentGateway treat that
 * exception as "never left". When the window ends, the same port carries requests again.
 */
class FaultProxyTest {
    private static final Duration CONNECT_TIMEOUT = Duration.ofMillis(250);
    private final AtomicInteger served = new AtomicInteger();
    private HttpServer upstream;
    private FaultProxy proxy;

    @BeforeEach
    void start() throws IOException {
        upstream = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
        upstream.createContext("/payments", exchange -> {
            served.incrementAndGet();
            exchange.getRequestBody().readAllBytes();
            byte[] body = "{\"status\":\"captured\"}".getBytes();
            exchange.sendResponseHeaders(201, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        upstream.start();
        proxy = FaultProxy.start(URI.create("http://127.0.0.1:" + upstream.getAddress().getPort()), 8);
    }

    @AfterEach
    void stop() {
        proxy.close();
        upstream.stop(0);
    }

    @Test
    void whileConnectionsTimeOutAPaymentFailsWithAConnectTimeoutAndNothingReachesTheProvider() throws Exception {
        assertThat(post().status()).as("through the proxy before the window").isEqualTo(201);

        assertThat(proxy.down("a test", FaultProxy.Door.TIMED_OUT)).isTrue();
        long start = System.nanoTime();
        assertThatThrownBy(this::post).as("neither refused nor reset: the connect times out").isInstanceOf(HttpConnectTimeoutException.class);
        Duration waited = Duration.ofNanos(System.nanoTime() - start);
        assertThat(served.get()).as("the provider saw only the request before the window").isEqualTo(1);

        proxy.up();

        assertThat(post().status()).as("the same port carries requests again").isEqualTo(201);
        assertThat(served.get()).isEqualTo(2);
        assertThat(waited).as("it waited for the connect timeout, and no longer than the request's own").isBetween(
                CONNECT_TIMEOUT.minusMillis(50), Duration.ofSeconds(2));
        assertThat(proxy.windows()).singleElement().satisfies(w -> {
            assertThat(w.door()).as("the queue was filled, so the door really timed out").isEqualTo(FaultProxy.Door.TIMED_OUT);
            assertThat(w.describe()).isEqualTo("a test; connections time out");
        });
    }

    /** A POST as lastseat sends one, from a client of its own (a cached connection would not connect again). */
    private Outside.Answer post() throws IOException, InterruptedException {
        OutsideHttp http = new OutsideHttp(new OutsideConfig(proxy.url().toString(), CONNECT_TIMEOUT, Duration.ofSeconds(3), Duration.ofMillis(100),
                                                             65536, Duration.ofMinutes(10), 32));
        return http.post("/payments", "{}", Map.of(), Duration.ofSeconds(3));
    }
}
