package lastseat.db;

import lastseat.config.DbConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * With every commit written by the committing thread (WRITE_DELAY=0, so a killed process loses no
 * answered commit), an interrupted thread that commits must not break the database: an interrupt
 * closes an NIO FileChannel, which H2 takes for a broken disk. The unsafe variant shows it happen;
 * the database as lastseat opens it survives the same interrupt and keeps the flag set.
 */
class InterruptedCommitTest {

    @Test
    void aCommitByAnInterruptedThreadClosesAPlainFileDatabase(@TempDir Path dir) throws Exception {
        String url = "jdbc:h2:file:" + dir.resolve("plain") + ";WRITE_DELAY=0";
        try (Connection c = DriverManager.getConnection(url, "sa", "")) {
            c.createStatement().execute("CREATE TABLE t (id INT PRIMARY KEY)");

            Thread interrupted = Thread.ofPlatform().start(() -> {
                try (Connection other = DriverManager.getConnection(url, "sa", "")) {
                    Thread.currentThread().interrupt();
                    other.createStatement().execute("INSERT INTO t VALUES (1)");
                } catch (Exception expected) {
                    // the failure under test; the next statement shows what it did to the database
                }
            });
            interrupted.join(Duration.ofSeconds(10));

            assertThatThrownBy(() -> c.createStatement().execute("INSERT INTO t VALUES (2)"))
                    .hasMessageContaining("closed");
        }
    }

    @Test
    void theDatabaseAsLastseatOpensItSurvivesAnInterruptedCommitAndKeepsTheFlag(@TempDir Path dir) throws Exception {
        try (Database db = Database.open(new DbConfig("jdbc:h2:file:" + dir.resolve("lastseat"), "sa", "", 4,
                                                      Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(1), 16))) {
            AtomicBoolean flagKept = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();

            Thread interrupted = Thread.ofVirtual().start(() -> {
                Thread.currentThread().interrupt();
                try {
                    db.inTransaction(c -> Sql.update(c, "INSERT INTO events (id, name, capacity, price, currency, created_at) "
                                                        + "VALUES ('e', 'E', 1, 1, 'EUR', CURRENT_TIMESTAMP)"));
                } catch (RuntimeException e) {
                    failure.set(e);
                }
                flagKept.set(Thread.currentThread().isInterrupted());
            });
            interrupted.join(Duration.ofSeconds(10));

            assertThat(failure.get()).isNull();
            assertThat(flagKept).as("the interrupt is not swallowed").isTrue();
            java.util.List<String> events = db.read(c -> Sql.list(c, "SELECT id FROM events", rs -> rs.getString(1)));
            assertThat(events).containsExactly("e");
            assertThat(db.activeConnections()).isZero();
        }
    }
}
