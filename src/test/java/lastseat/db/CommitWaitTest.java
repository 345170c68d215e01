package lastseat.db;

import lastseat.config.DbConfig;
import org.h2.engine.SessionLocal;
import org.h2.jdbc.JdbcConnection;
import org.h2.mvstore.FileStore;
import org.h2.mvstore.MVStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A commit on an H2 file waits for its chunk to be written, which lasts as long as the file is slow or a
 * housekeeping pass holds the gate. Made to happen here by keeping H2's saving thread busy (a slow disk,
 * as the gate sees it), with two committers on a pool of two connections. The unsafe variant, commits
 * that wait on their connections, leaves the next read none for the whole wait; {@link Database#inTransaction}
 * and {@link Database#write} wait with the connection back in the pool, so the read runs and sees both
 * commits, and each still returns only once its chunk is in the file.
 */
class CommitWaitTest {
    private static final String INSERT = "INSERT INTO notes (id) VALUES (?)";
    @TempDir
    Path dir;
    private Database db;
    private final CountDownLatch diskBack = new CountDownLatch(1);

    @BeforeEach
    void open() {
        db = Database.open(new DbConfig("jdbc:h2:file:" + dir.resolve("live").resolve("gated"), "sa", "", 2,
                                        Duration.ofMillis(500), Duration.ofSeconds(2), Duration.ofSeconds(1), 16));
        db.inTransaction(c -> Sql.update(c, "CREATE TABLE notes (id INT PRIMARY KEY)"));
    }

    @AfterEach
    void close() {
        diskBack.countDown();
        db.close();
    }

    @Test
    void commitsThatWaitForTheirChunkOnTheirConnectionsLeaveTheNextReadNoConnection() throws Exception {
        ThreadPoolExecutor saver = slowDisk();
        List<CompletableFuture<Integer>> committers = List.of(1, 2).stream().map(id -> CompletableFuture.supplyAsync(
                () -> db.read(c -> {
                    c.setAutoCommit(false);
                    int rows = Sql.update(c, INSERT, id);
                    c.commit();
                    c.setAutoCommit(true);
                    return rows;
                }), Thread::startVirtualThread)).toList();
        awaitWaitingFor(saver);
        Instant giveUp = Instant.now().plusSeconds(10);
        while (db.activeConnections() < 2) {
            assertThat(Instant.now()).as("both committers on a connection").isBefore(giveUp);
            Thread.sleep(5);
        }

        assertThatThrownBy(this::ids).as("both connections wait with their commits").isInstanceOf(DatabaseBusy.class);

        diskBack.countDown();
        for (CompletableFuture<Integer> committer : committers) {
            assertThat(committer.get(10, TimeUnit.SECONDS)).isEqualTo(1);
        }
        assertThat(ids()).containsExactly(1, 2);
        assertThat(db.activeConnections()).as("every connection back in the pool").isZero();
    }

    @Test
    void transactionsWaitForTheirChunkWithTheirConnectionsBackInThePool() throws Exception {
        waitWithConnectionsBackInThePool(id -> db.inTransaction(c -> Sql.update(c, INSERT, id)));
    }

    @Test
    void writesWaitForTheirChunkWithTheirConnectionsBackInThePool() throws Exception {
        waitWithConnectionsBackInThePool(id -> db.write(c -> Sql.update(c, INSERT, id)));
    }

    /** Both committers through {@code commit}, which fills the pool if it keeps its connection while it waits. */
    private void waitWithConnectionsBackInThePool(java.util.function.IntFunction<Integer> commit) throws Exception {
        ThreadPoolExecutor saver = slowDisk();
        List<CompletableFuture<Integer>> committers = List.of(1, 2).stream().map(id -> CompletableFuture.supplyAsync(
                () -> commit.apply(id), Thread::startVirtualThread)).toList();
        awaitWaitingFor(saver);
        Instant giveUp = Instant.now().plusSeconds(10);
        List<Integer> seen;
        while ((seen = ids()).size() < 2) {
            assertThat(Instant.now()).as("both commits made").isBefore(giveUp);
            Thread.sleep(5);
        }

        assertThat(seen).as("the reads had a connection and see both commits").containsExactly(1, 2);
        assertThat(committers.stream().filter(CompletableFuture::isDone)).as("none returned before its chunk is written").isEmpty();

        diskBack.countDown();
        for (CompletableFuture<Integer> committer : committers) {
            assertThat(committer.get(10, TimeUnit.SECONDS)).isEqualTo(1);
        }
        Path copy = Files.createDirectories(dir.resolve("copy"));
        Files.copy(dir.resolve("live").resolve("gated.mv.db"), copy.resolve("gated.mv.db"));
        try (Database copied = Database.open(new DbConfig("jdbc:h2:file:" + copy.resolve("gated"), "sa", "", 2,
                                                          Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(1), 16))) {
            List<Integer> inCopy = copied.read(c -> Sql.list(c, "SELECT id FROM notes ORDER BY id", rs -> rs.getInt(1)));
            assertThat(inCopy).as("the file as a kill would leave it once both returned").containsExactly(1, 2);
        }
        assertThat(db.activeConnections()).as("every connection back in the pool").isZero();
    }

    private List<Integer> ids() {
        return db.read(c -> Sql.list(c, "SELECT id FROM notes ORDER BY id", rs -> rs.getInt(1)));
    }

    /** H2's thread that saves chunks, kept busy until {@link #diskBack}: every commit's wait for its chunk lasts until then. */
    private ThreadPoolExecutor slowDisk() throws Exception {
        MVStore store = db.read(c -> ((SessionLocal) c.unwrap(JdbcConnection.class).getSession()).getDatabase().getStore().getMvStore());
        Field field = FileStore.class.getDeclaredField("bufferSaveExecutor");
        field.setAccessible(true);
        ThreadPoolExecutor saver = (ThreadPoolExecutor) field.get(store.getFileStore());
        CountDownLatch busy = new CountDownLatch(1);
        saver.execute(() -> {
            busy.countDown();
            try {
                diskBack.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        assertThat(busy.await(10, TimeUnit.SECONDS)).isTrue();
        return saver;
    }

    /** Until a commit has asked the busy saver for its chunk: its change is in H2, its wait has begun. */
    private static void awaitWaitingFor(ThreadPoolExecutor saver) throws InterruptedException {
        Instant giveUp = Instant.now().plusSeconds(10);
        while (saver.getQueue().isEmpty()) {
            assertThat(Instant.now()).as("a commit waiting for the saver").isBefore(giveUp);
            Thread.sleep(5);
        }
    }
}
