package lastseat.drill;

import lastseat.support.Invariants;
import lastseat.support.TestApp;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.net.URI;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every drill of {@code bin/drill}, run the way the command runs it (HTTP to the server and to
 * WireMock's admin API), against a real server with the stubs of {@code wiremock/}. Fast settings:
 * the long-tail drill makes 100 purchases instead of 200, and answers get 250 ms of slack instead of
 * bin/drill's 150 ms: here the stubs share the test's JVM, and a CI machine may be busy (60 buyers at
 * once on two starved cores took 955 ms to be answered at an 800 ms deadline).
 */
class DrillsTest {
    private static final java.time.Duration SLACK = java.time.Duration.ofMillis(250);

    /** Every drill but the money audit, which MoneyAuditTest runs with a fixed seed. */
    static List<String> drills() {
        return Drills.catalogue().stream().map(Drill::name).filter(name -> !name.equals(MoneyAudit.NAME)).toList();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("drills")
    void drillHoldsEveryInvariantItChecks(String name) {
        TestApp app = TestApp.shared();
        Target target = new Target(URI.create("http://127.0.0.1:" + app.running.port()),
                                   URI.create("http://127.0.0.1:" + app.stubs.port()));
        Drill drill = Drills.catalogue().stream().filter(d -> d.name().equals(name)).findFirst().orElseThrow();

        Findings.Report report = Drills.run(drill, target, Settings.defaults().withLongTail(100, 10).withSlack(SLACK));

        assertThat(report.ok()).as(String.join("\n", report.lines())).isTrue();
        assertThat(report.lines()).as("the drill checked something").anyMatch(line -> line.startsWith("  ok"));
        assertThat(report.json()).startsWith("{\"drill\":\"" + name + "\",\"ok\":true");
        Invariants.resourcesCameBack(app);
    }
}
