package lastseat.drills;

import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.ServerProcess;
import lastseat.testkit.StubServer;
import lastseat.testkit.TempDirs;
import com.github.tomakehurst.wiremock.WireMockServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A rolling deploy during an on-sale: SIGTERM to a real lastseat process with purchases in flight.
 * It drains — stops taking requests, lets every purchase in flight answer within its deadline and
 * slack, then closes the pool — so every buyer gets a final answer (201, 202 or a 4xx) and nothing
 * is left HELD or PAYING for recovery to find. Without the drain the pool closed under running
 * purchases, connections were cut, and the log said "charged but could not be confirmed".
 */
class RollingStopTest {
    private static final int BUYERS = 20;
    private static WireMockServer stubs;

    @BeforeAll
    static void startStubs() {
        stubs = StubServer.create();
        stubs.start();
    }

    @AfterAll
    static void stopStubs() {
        stubs.stop();
    }

    @Test
    void sigtermWithTwentyPurchasesInFlightAnswersEveryBuyerAndLeavesNothingForRecovery() throws Exception {
        Path dir = Files.createTempDirectory("lastseat-rolling-stop");
        // Payments take long enough that the stop finds every purchase between its reservation and its answer.
        stubs.stubFor(post(urlPathEqualTo("/payments")).atPriority(1)
                              .willReturn(aResponse().withStatus(201).withUniformRandomDelay(200, 600).withTransformers("ledger")));
        // A deadline of 3 s: this is about the stop, not about a cold server's speed on a busy machine.
        ServerProcess server = ServerProcess.start(dir, URI.create("http://127.0.0.1:" + stubs.port()),
                                                   Map.of("purchase.deadline", "3s"));
        List<Answer> answers;
        String event;
        OptionalInt exit;
        try {
            Target target = new Target(server.instance(), URI.create("http://127.0.0.1:" + stubs.port()));
            event = target.newEvent(BUYERS * 2);
            String warmUp = target.newEvent(BUYERS);
            Target.together(BUYERS, i -> target.buyOne(warmUp));
            stubs.resetRequests();
            target.warmConnections(BUYERS);
            AtomicReference<OptionalInt> stopped = new AtomicReference<>();
            Thread deploy = Thread.ofVirtual().start(() -> {
                awaitPaymentsArrived(BUYERS);
                stopped.set(server.terminate(Duration.ofSeconds(20)));
            });
            answers = Target.together(BUYERS, i -> {
                try {
                    return target.purchase(UUID.randomUUID().toString(), LastseatClient.quantityBody(event, 1, "buyer-" + i));
                } catch (RuntimeException cut) {
                    return null;
                }
            });
            deploy.join(Duration.ofSeconds(30));
            exit = stopped.get();
        } finally {
            server.close();
        }

        List<Integer> statuses = new ArrayList<>();
        answers.forEach(a -> statuses.add(a == null ? -1 : a.status()));
        assertThat(statuses).as("every buyer got a final answer, none a cut connection or a 5xx: " + Target.describe(
                answers.stream().filter(java.util.Objects::nonNull).toList())).allMatch(s -> s == 201 || s == 202 || (s >= 400 && s < 500));
        assertThat(exit).as("the process exited on SIGTERM within its drain").isPresent();
        Map<String, Integer> left = states(dir, event);
        assertThat(left).as("nothing left for recovery to find").doesNotContainKeys("HELD", "PAYING");
        assertThat(Files.readString(server.log())).doesNotContain("could not be confirmed").doesNotContain("could not be marked");
        // Reached only when everything held: a failure keeps the directory, and the server's log, for a look.
        TempDirs.deleteQuietly(dir);
    }

    private static void awaitPaymentsArrived(int n) {
        long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (stubs.getAllServeEvents().stream().filter(e -> e.getRequest().getUrl().equals("/payments")).count() < n) {
            if (System.nanoTime() > until) {
                throw new AssertionError("the payments never all reached the provider");
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
        }
    }

    /** The event's purchases by state, read from the stopped server's H2 file. */
    private static Map<String, Integer> states(Path dir, String event) throws Exception {
        try (Connection c = DriverManager.getConnection("jdbc:h2:file:" + dir.resolve("lastseat").toAbsolutePath(), "sa", "");
             var st = c.prepareStatement("SELECT state, COUNT(*) FROM purchases WHERE event_id = ? GROUP BY state")) {
            st.setString(1, event);
            Map<String, Integer> states = new TreeMap<>();
            try (ResultSet rs = st.executeQuery()) {
                while (rs.next()) {
                    states.put(rs.getString(1), rs.getInt(2));
                }
            }
            return states;
        }
    }
}
