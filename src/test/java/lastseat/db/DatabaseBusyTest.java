package lastseat.db;

import lastseat.support.HeldConnection;
import lastseat.config.DbConfig;
import lastseat.web.Edge;
import lastseat.web.Problem;
import lastseat.web.Reply;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * An exhausted pool is overload, not a fault: the request that finds no connection within
 * db.connection-timeout gets a 503 problem with Retry-After (DatabaseBusy), never a 500.
 */
class DatabaseBusyTest {

    @Test
    void aRequestThatFindsEveryConnectionTakenIsA503WithRetryAfter(@TempDir Path dir) throws Exception {
        try (Database db = Database.open(new DbConfig("jdbc:h2:file:" + dir.resolve("db"),
                                                      "sa", "", 2, Duration.ofMillis(250), Duration.ofSeconds(1), Duration.ofSeconds(1), 16))) {
            CountDownLatch taken = new CountDownLatch(2);
            CountDownLatch release = new CountDownLatch(1);
            for (int i = 0; i < 2; i++) {
                Thread.ofVirtual().start(() -> HeldConnection.hold(db, taken, release));
            }
            assertThat(taken.await(10, TimeUnit.SECONDS)).as("both connections taken").isTrue();

            Throwable refused = catchThrowable(() -> db.read(c -> c.isValid(1)));
            release.countDown();

            assertThat(refused).isInstanceOf(DatabaseBusy.class);
            Edge edge = new Edge(Duration.ofSeconds(3));
            Problem problem = edge.problemFor(refused, "/somewhere", "unexpected");
            assertThat(problem.status()).isEqualTo(503);
            assertThat(problem.kind()).isEqualTo("database-busy");
            Reply reply = edge.reply(problem, "/somewhere");
            assertThat(reply.retryAfter()).as("the Retry-After of every 503").isEqualTo(Duration.ofSeconds(3));
            long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
            while (db.activeConnections() > 0 && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            assertThat(db.activeConnections()).as("both connections came back").isZero();
        }
    }
}
