package lastseat.bench;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Keeps bin/bench working: every scenario runs tiny (a few purchases per server) and the table comes
 * out. Benchmarks are not tests, so no figure is asserted; the numbers of a smoke run mean nothing.
 */
class BenchSmokeTest {

    @Test
    void everyScenarioRunsAndTheTableHasItsRows() throws Exception {
        String table = Bench.run(true, List.of());

        assertThat(table).startsWith("| figure | value | limit it is compared with | ratio |");
        assertThat(table.lines().count()).as(table).isGreaterThanOrEqualTo(2 + 13);
        assertThat(table).contains("p50 purchase latency", "Little's law", "raw JDBC", "H2 memory", "RSS");
    }
}
