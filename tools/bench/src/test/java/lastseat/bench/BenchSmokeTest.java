package lastseat.bench;

import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.abort;

/**
 * Keeps bin/bench working: every scenario runs tiny (a few purchases per server) and the table comes
 * out. Benchmarks are not tests, so no figure is asserted; the numbers of a smoke run mean nothing.
 */
class BenchSmokeTest {
    private static final String POSTGRES = "jdbc:postgresql://127.0.0.1:5432/postgres";

    @Test
    void everyScenarioRunsAndTheTableHasItsRows() throws Exception {
        String table = Bench.run(true, List.of());

        assertThat(table).startsWith("| figure | value | limit it is compared with | ratio |");
        assertThat(table.lines().count()).as(table).isGreaterThanOrEqualTo(2 + 13 + 10);
        assertThat(table).contains("p50 purchase latency", "Little's law", "raw JDBC", "H2 memory", "RSS");
        assertThat(table).as("the on-sale's rows").contains("| cold burst: rounds answered exactly 1 × 201",
                "on-sale overload", ": confirmed/s", "share of answers 202", "503 server time p99", "503 server time max",
                ": answers by status", "answers later than deadline + slack (I5", "lastseat CPU per confirmed purchase (H2 file)",
                "on-sale light load", "p99 purchase latency", "on-sale steady load");
        assertThat(table).as("the PostgreSQL part runs only with --postgres").doesNotContain("two instances on one PostgreSQL");
    }

    /**
     * {@code bin/bench onsale-pg}, tiny: the on-sale's part on PostgreSQL, which {@code onsale --postgres} runs
     * after the H2 phases the test above covers already. Skipped, loudly, when PostgreSQL is not reachable —
     * unless {@code LASTSEAT_REQUIRE_POSTGRES=1} (CI), then it fails.
     */
    @Test
    void theOnSaleOnPostgresqlRunsAndTheTableHasItsRows() throws Exception {
        try (Connection c = DriverManager.getConnection(POSTGRES, "postgres", "")) {
            assertThat(c.isValid(5)).isTrue();
        } catch (SQLException e) {
            String why = "PostgreSQL at 127.0.0.1:5432 is not usable (" + e.getMessage() + ")";
            if ("1".equals(System.getenv("LASTSEAT_REQUIRE_POSTGRES"))) {
                throw new AssertionError(why + " and LASTSEAT_REQUIRE_POSTGRES=1", e);
            }
            System.err.println("\n*** SKIPPED BenchSmokeTest.theOnSaleOnPostgresqlRunsAndTheTableHasItsRows: " + why + " ***\n");
            abort("SKIPPED: " + why);
        }

        String table = Bench.run(true, true, List.of("onsale-pg"));

        assertThat(table).as(table).contains("two instances on one PostgreSQL", ": answered 201", ": answered 409", ": answered 5xx",
                "answers later than deadline + slack (I5",
                "lastseat CPU per confirmed purchase (PostgreSQL)");
        assertThat(table).as("the database was there: a figure, not a dash").doesNotContain("PostgreSQL not reachable");
    }
}
