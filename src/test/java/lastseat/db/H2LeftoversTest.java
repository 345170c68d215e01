package lastseat.db;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The repair of commits a crash left half applied needs two package-private methods of H2: an H2
 * without them fails here, in the build, before it could open a file with half a commit in it; and it
 * never touches a database another session has open, whose live transactions look like leftovers. The
 * repair itself meets real leftovers under kill -9 in {@code KillCommitsTest} and {@code bin/drill
 * kill-commits}, which count the ones it finished.
 */
class H2LeftoversTest {

    @Test
    void aCleanFileHasNothingToFinishAndTheMethodsTheRepairNeedsAreThere(@TempDir Path dir) throws Exception {
        try (Connection c = DriverManager.getConnection(Database.durable("jdbc:h2:file:" + dir.resolve("clean")), "sa", "")) {
            assertThat(H2Leftovers.finish(c)).isZero();
        }
    }

    @Test
    void aDatabaseAlreadyOpenInThisProcessIsLeftAloneWithItsLiveTransactions(@TempDir Path dir) throws Exception {
        String url = Database.durable("jdbc:h2:file:" + dir.resolve("open"));
        try (Connection writer = DriverManager.getConnection(url, "sa", "");
             Connection other = DriverManager.getConnection(url, "sa", "")) {
            writer.createStatement().execute("CREATE TABLE t (id INT PRIMARY KEY)");
            writer.setAutoCommit(false);
            writer.createStatement().execute("INSERT INTO t VALUES (1)");

            assertThat(H2Leftovers.finish(other)).as("a second session: the first opener's run saw the leftovers").isZero();
            assertThat(other.createStatement().executeQuery("SELECT COUNT(*) FROM t")).satisfies(rs -> {
                rs.next();
                assertThat(rs.getInt(1)).isZero();
            });
            writer.rollback();
        }
    }
}
