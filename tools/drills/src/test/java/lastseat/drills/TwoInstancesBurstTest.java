package lastseat.drills;

import lastseat.testkit.FreshPostgres;
import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.ServerProcess;
import lastseat.testkit.StubServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The on-sale at the last seats, on two instances of one PostgreSQL database: 300 buyers of one seat
 * each, released together, half at each instance, for 30 seats. The behaviour, without the timing
 * (bin/bench onsale --postgres measures that under the shipped 800 ms deadline): the deadline here is
 * 5 s, so a busy machine makes nobody late, and what is checked is what admission does with a crowd —
 * every buyer is told the truth: 30 × 201, and 270 × 409 (the seats are gone), never 503 while it is
 * the seats that ran out, and every seat sold by the burst itself.
 *
 * <p>Without admission's waiting (a refused buyer reads its seats only after those admitted before it
 * reserved, and waits for a place while the seats left are fewer than those running could take), the
 * buyers refused a place were told 503 while seats were still being decided. Skipped, loudly, when
 * PostgreSQL is not reachable — unless {@code LASTSEAT_REQUIRE_POSTGRES=1} (CI), then it fails.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TwoInstancesBurstTest {
    private static final int SEATS = 30;
    private static final int BUYERS = 300;

    private final FreshPostgres database = new FreshPostgres("lastseat_burst_");
    private WireMockServer stubs;
    private final List<ServerProcess> servers = new ArrayList<>();
    private final List<Target> instances = new ArrayList<>();
    private String event;
    private List<Answer> answers;

    @BeforeAll
    void threeHundredBuyersAtOnceAtTwoInstancesForThirtySeats() throws Exception {
        database.create("TwoInstancesBurstTest");
        stubs = StubServer.create();
        stubs.start();
        URI stubsUri = URI.create("http://127.0.0.1:" + stubs.port());
        Path dir = Files.createDirectories(Path.of("target", "two-instances-burst", database.name()));
        // Every bound a busy machine stretches is the deadline's 5 s here, the row locks' wait included: a
        // seat claim queued behind others' for 2 s on two loaded cores is a timing, not what this test checks.
        Map<String, String> settings = Map.of("db.url", database.url(), "db.user", "postgres",
                                              "purchase.deadline", "5s", "payment.max-wait", "5s", "db.connection-timeout", "5s",
                                              "db.lock-timeout", "5s", "outside.connect-timeout", "1s");
        try (ExecutorService starting = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<ServerProcess>> started = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                started.add(starting.submit(() -> ServerProcess.start(dir, stubsUri, settings)));
            }
            for (Future<ServerProcess> start : started) {
                servers.add(start.get());
            }
        }
        for (ServerProcess server : servers) {
            Target instance = new Target(server.instance(), stubsUri);
            String warm = instance.newEvent(10);
            Target.together(10, i -> instance.buyOne(warm));
            instances.add(instance);
        }
        event = instances.getFirst().newEvent(SEATS);

        answers = Target.together(BUYERS, i -> instances.get(i % 2).purchase("burst-" + i + "-" + UUID.randomUUID(),
                                                                            LastseatClient.quantityBody(event, 1, "burst-" + i)));
    }

    @AfterAll
    void stopServersAndDropDatabase() throws SQLException {
        servers.forEach(ServerProcess::close);
        if (stubs != null) {
            stubs.stop();
        }
        database.close();
    }

    @Test
    void everyBuyerIsToldTheTruthAndNoneIsShedAndEverySeatIsSoldByTheBurst() {
        Map<Integer, Long> byStatus = answers.stream().collect(Collectors.groupingBy(Answer::status, TreeMap::new, Collectors.counting()));

        assertThat(byStatus).as("answers to the burst; not 201 or 409: %s", answers.stream()
                        .filter(a -> a.status() != 201 && a.status() != 409).map(a -> a.header("Server-Timing") + " " + a.body()).toList())
                .isEqualTo(Map.of(201, (long) SEATS, 409, (long) (BUYERS - SEATS)));
        assertThat(answers.stream().filter(a -> a.status() == 409).map(a -> a.json().path("type").asText()).distinct())
                .containsOnly("urn:lastseat:problem:sold-out");
        Findings findings = new Findings();
        JsonNode seats = findings.invariantsHold(instances.getFirst(), event);
        assertThat(findings.ok()).as("I1, I2, I4: %s", seats).isTrue();
        assertThat(seats.path("sold").asInt()).as("every seat sold by the burst: %s", seats).isEqualTo(SEATS);
        assertThat(seats.path("held").asInt()).as("nothing left held").isZero();
        for (Target instance : instances) {
            assertThat(instance.freePaymentPermits()).as("every payment permit back").isEqualTo(20);
        }
    }
}
