package lastseat.drills;

import com.github.tomakehurst.wiremock.WireMockServer;
import lastseat.testkit.ServerProcess;
import lastseat.testkit.StubServer;
import lastseat.testkit.TempDirs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every drill of {@code bin/drill}, run the way the command runs it — HTTP to a lastseat process and
 * to WireMock's admin API — against one real server (H2 in a temporary directory, drills enabled)
 * and the stubs of {@code wiremock/} in this JVM. Fast settings: the long-tail drill makes 100
 * purchases instead of 200, and answers get 250 ms of slack instead of bin/drill's 150 ms, because
 * the stubs share this JVM and a CI machine may be busy (60 buyers at once on two starved cores took
 * 955 ms to be answered at an 800 ms deadline). The money audit has its own test, with a fixed seed.
 */
class DrillsTest {
    private static final Duration SLACK = Duration.ofMillis(250);
    /**
     * payment.permits as the server runs (the default). Not read from the server at the start of a
     * test: a reconciler resending an earlier drill's payment may hold a permit at that moment.
     */
    private static final int PERMITS = 20;
    private static WireMockServer stubs;
    private static ServerProcess server;
    private static Target target;
    private static Path dir;
    /** Whether every drill so far held; a failure keeps the server's directory, and its log, for a look. */
    private static volatile boolean allHeld = true;

    @BeforeAll
    static void start() throws IOException {
        stubs = StubServer.create();
        stubs.start();
        URI stubsUri = URI.create("http://127.0.0.1:" + stubs.port());
        dir = Files.createTempDirectory("lastseat-drills-test");
        server = ServerProcess.start(dir, stubsUri, Map.of());
        target = new Target(server.instance(), stubsUri);
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
        stubs.stop();
        if (dir != null && allHeld) {
            TempDirs.deleteQuietly(dir);
        }
    }

    static List<String> drills() {
        // The two campaigns have tests of their own (MoneyAuditTest, KillCommitsTest), sized for bin/test.
        return Drills.catalogue().stream().map(Drill::name)
                .filter(name -> !name.equals(MoneyAudit.NAME) && !name.equals(KillCommits.NAME)).toList();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("drills")
    void drillHoldsEveryInvariantItChecks(String name) {
        Drill drill = Drills.catalogue().stream().filter(d -> d.name().equals(name)).findFirst().orElseThrow();
        Findings.Report report = Drills.run(drill, target, Settings.defaults().withLongTail(100, 10).withSlack(SLACK));
        allHeld &= report.ok();

        assertThat(report.ok()).as(String.join("\n", report.lines())).isTrue();
        assertThat(report.lines()).as("the drill checked something").anyMatch(line -> line.startsWith("  ok"));
        assertThat(report.json()).startsWith("{\"drill\":\"" + name + "\",\"ok\":true");
        assertThat(LifecycleDrills.await(Duration.ofSeconds(10), () -> target.freePaymentPermits() == PERMITS))
                .as("every payment permit came back").isTrue();
    }
}
