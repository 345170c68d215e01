package lastseat.db;

import org.h2.api.ErrorCode;
import org.h2.engine.SessionLocal;
import org.h2.jdbc.JdbcConnection;
import org.h2.mvstore.FileStore;
import org.h2.mvstore.MVStore;
import org.h2.store.fs.Recorder;
import org.h2.store.fs.rec.FilePathRec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Real-parts tier (H2 files): an H2 file that reuses space keeps every commit that returned, in every
 * state a kill -9 can leave it in, only through {@link H2CommitGate}. Writers insert a row per commit and
 * delete their row {@value #LIVE} before it, so that chunks die and are freed. H2 writes its file through
 * its recording file system ({@code rec:}), which hands this test every write and truncation in the order
 * they were made; the file after each of them is what a kill between two writes leaves (the writes are
 * in the page cache), and each is opened as the restart would open it. Each must open, and hold every
 * commit that had returned before that write.
 *
 * <p>H2 2.5.252 alone, reusing space, writes a chunk into a hole while its store header names the chunk
 * before: the file after a commit returned lacks that commit. Through the gate, four writers at once and
 * a housekeeping pass due every 10 ms (the service allows 100 ms at least; here many passes fall among the
 * commits), no state lacks a returned commit; and with one writer, the file stays a fraction of what
 * appending every chunk makes it. The gate is used here as {@link Database} builds it,
 * without the pool: a {@code rec:} URL is not one {@code Database} puts through the gate.
 *
 * <p>Past H2's longest retention (24.8 days of a file's life; the file's clock is moved back), H2 alone
 * frees a chunk at the next commit once it dies, before any fsync, which a power cut would find; through
 * the gate it waits for a housekeeping pass ({@code H2CommitGate.FreedByPasses}).
 */
class ReusedSpaceTest {
    private static final int LIVE = 50;
    private static final String PAD = "x".repeat(400);

    @TempDir
    Path dir;

    @AfterEach
    void stopRecording() {
        FilePathRec.setRecorder(null);
    }

    @Test
    void h2AloneReusingSpaceLeavesAStateThatLacksTheCommitThatReturned() throws Exception {
        Recording file = Recording.of(dir.resolve("plain"));
        try (Connection h2 = DriverManager.getConnection("jdbc:h2:" + file.url() + ";WRITE_DELAY=0;REUSE_SPACE=TRUE;RETENTION_TIME=0",
                                                         "sa", "")) {
            create(h2);
            write(h2, 0, 300, file);
        }

        assertThat(file.statesLacking(true)).as("a state after a returned commit that lacks it, or cannot be opened").isNotEmpty();
    }

    @Test
    void throughTheGateEveryStateHoldsEveryReturnedCommitOfFourWritersAtOnce() throws Exception {
        Recording reused = Recording.of(dir.resolve("reused"));
        gated(reused, Duration.ofMillis(10), 4, 150);

        assertThat(reused.states()).as("the states checked").isGreaterThan(150);
        assertThat(reused.statesLacking(false)).as("states after a returned commit that lack it, or cannot be opened, of %d",
                                                   reused.states()).isEmpty();
        assertThat(reused.writesIntoUsedSpace()).as("chunks written where the file had held others").isPositive();
    }

    @Test
    void throughTheGateSpaceIsReusedAndTheFileStaysAFractionOfEveryChunkAppended() throws Exception {
        // A pass due every 2 ms (the service allows 100 ms at least): how many commits a pass follows then depends
        // little on how fast this machine commits, and the bound below holds on a warm JVM as on a cold one.
        long reusedBytes = gated(Recording.positionsOf(dir.resolve("reused")), Duration.ofMillis(2), 1, 1_000);
        Recording appended = Recording.positionsOf(dir.resolve("appended"));
        long appendedBytes = gated(appended, Duration.ZERO, 1, 1_000);

        assertThat(appended.writesIntoUsedSpace()).as("chunks written where the file had held others, every chunk appended").isZero();
        assertThat(reusedBytes).as("the file with space reused, against every chunk appended (%d bytes)", appendedBytes)
                .isLessThan(appendedBytes / 4);
    }

    @Test
    void h2AloneFreesAChunkOlderThanItsRetentionBeforeAnyFsyncOnceItDies() throws Exception {
        try (Connection h2 = DriverManager.getConnection("jdbc:h2:nio:" + dir.resolve("aged") + ";WRITE_DELAY=0;REUSE_SPACE=TRUE;RETENTION_TIME="
                                                         + Integer.MAX_VALUE, "sa", "")) {
            Aged aged = chunksFreedByCommitsOnceAged(h2);

            assertThat(aged.freed()).as("chunks that died after the last fsync, freed by the next commits (of %s)", aged.died())
                    .isNotEmpty();
        }
    }

    @Test
    void throughTheGateAChunkOlderThanH2sRetentionIsLeftForAPassOnceItDies() throws Exception {
        // A pass is due at the first commit, then not for an hour: every chunk freed below would be a commit's doing.
        H2CommitGate gate = new H2CommitGate("jdbc:h2:async:" + dir.resolve("aged") + ";WRITE_DELAY=0;REUSE_SPACE=FALSE", "sa", "",
                                             Duration.ofHours(1));
        try (Connection c = gate.getConnection()) {
            H2CommitGate.collectUndoLogsLast(c);
            create(c);
            write(c, 0, 1, null);
            awaitFirstPass(c);
            Aged aged = chunksFreedByCommitsOnceAged(c);

            assertThat(aged.died()).as("chunks that died after the last pass").isNotEmpty();
            assertThat(aged.freed()).as("chunks that died after the last pass's fsync, freed by commits").isEmpty();
        }
    }

    /**
     * Fills a table in a commit of its own, makes every chunk so far older than H2's longest retention
     * ({@code int} milliseconds, about 24.8 days: the file's clock is moved back, which is what a file that
     * old has), empties the table in one commit, then commits ten times more. Of the chunks the file listed
     * before the table was emptied: those that died since, and those the commits freed, none of them synced.
     */
    private static Aged chunksFreedByCommitsOnceAged(Connection c) throws Exception {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE filled (id INT PRIMARY KEY, pad VARCHAR(400) NOT NULL)");
            s.execute("CREATE TABLE later (id INT PRIMARY KEY)");
            // The tables' definitions go into a chunk of their own, so that the table's chunk holds little else.
            s.execute("INSERT INTO later VALUES (0)");
            c.commit();
            s.execute("INSERT INTO filled SELECT X, REPEAT('x', 400) FROM SYSTEM_RANGE(1, 200)");
            c.commit();
            // A chunk is listed by the one after it.
            s.execute("INSERT INTO later VALUES (-1)");
            c.commit();
        }
        MVStore store = ((SessionLocal) c.unwrap(JdbcConnection.class).getSession()).getDatabase().getStore().getMvStore();
        Map<Integer, String> before = chunks(store);
        Field created = FileStore.class.getDeclaredField("creationTime");
        created.setAccessible(true);
        created.setLong(store.getFileStore(), created.getLong(store.getFileStore()) - Duration.ofDays(25).toMillis());
        try (Statement s = c.createStatement()) {
            s.execute("DELETE FROM filled");
            c.commit();
            for (int i = 1; i <= 10; i++) {
                s.execute("INSERT INTO later VALUES (" + i + ")");
                c.commit();
            }
        }
        Map<Integer, String> after = chunks(store);
        List<Integer> freed = before.keySet().stream().filter(id -> !after.containsKey(id)).toList();
        List<Integer> died = before.keySet().stream()
                .filter(id -> !before.get(id).contains(",livePages:0,") && (!after.containsKey(id) || after.get(id).contains(",livePages:0,")))
                .toList();
        return new Aged(died, freed);
    }

    /** Chunks that died once aged, and those of them freed. */
    private record Aged(List<Integer> died, List<Integer> freed) {
    }

    /** The chunks the file lists, by id, with what the file says of each. */
    private static Map<Integer, String> chunks(MVStore store) {
        Map<Integer, String> chunks = new java.util.TreeMap<>();
        store.getLayoutMap().forEach((key, value) -> {
            if (key.startsWith("chunk.")) {
                chunks.put(Integer.parseInt(key.substring("chunk.".length()), 16), value);
            }
        });
        return chunks;
    }

    /** Waits, bounded, until the pass the first commit started has ended: its executor is the gate's, read as it is. */
    private static void awaitFirstPass(Connection c) throws Exception {
        MVStore store = ((SessionLocal) c.unwrap(JdbcConnection.class).getSession()).getDatabase().getStore().getMvStore();
        Field gates = H2CommitGate.class.getDeclaredField("GATES");
        gates.setAccessible(true);
        Object gate = ((Map<?, ?>) gates.get(null)).get(store);
        Field housekeeper = gate.getClass().getDeclaredField("housekeeper");
        housekeeper.setAccessible(true);
        ThreadPoolExecutor passes = (ThreadPoolExecutor) housekeeper.get(gate);
        long until = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (passes.getCompletedTaskCount() < 1) {
            assertThat(System.nanoTime()).as("the first pass ended within 10 s").isLessThan(until);
            Thread.sleep(5);
        }
    }

    /** {@code writers} threads of {@code commits} commits each through the gate; returns the file's size at the end. */
    private static long gated(Recording file, Duration housekeeping, int writers, int commits) throws Exception {
        H2CommitGate gate = new H2CommitGate("jdbc:h2:" + file.url() + ";WRITE_DELAY=0;REUSE_SPACE=FALSE;DB_CLOSE_ON_EXIT=FALSE",
                                             "sa", "", housekeeping);
        // Held to the end: H2 closes a database, compacting it, with its last connection.
        try (Connection first = gate.getConnection()) {
            H2CommitGate.collectUndoLogsLast(first);
            create(first);
            CyclicBarrier together = new CyclicBarrier(writers);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            for (int w = 0; w < writers; w++) {
                int writer = w;
                threads.add(Thread.ofPlatform().name("writer-" + w).start(() -> {
                    try (Connection c = gate.getConnection()) {
                        together.await();
                        write(c, writer, commits, file);
                    } catch (Throwable e) {
                        failed.compareAndSet(null, e);
                    }
                }));
            }
            for (Thread thread : threads) {
                thread.join();
            }
            assertThat(failed.get()).as("every writer's commits went through").isNull();
            return Files.size(file.path());
        }
    }

    private static void create(Connection c) throws SQLException {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE rows_kept (writer INT, id INT, pad VARCHAR(400) NOT NULL, PRIMARY KEY (writer, id))");
        }
        c.commit();
    }

    /** Row {@code i} in, row {@code i - LIVE} out, one commit each; every commit that returned is told to {@code file}, if any. */
    private static void write(Connection c, int writer, int commits, Recording file) throws SQLException {
        c.setAutoCommit(false);
        try (PreparedStatement in = c.prepareStatement("INSERT INTO rows_kept (writer, id, pad) VALUES (?, ?, ?)");
             PreparedStatement out = c.prepareStatement("DELETE FROM rows_kept WHERE writer = ? AND id = ?")) {
            for (int i = 1; i <= commits; i++) {
                in.setInt(1, writer);
                in.setInt(2, i);
                in.setString(3, PAD);
                in.executeUpdate();
                out.setInt(1, writer);
                out.setInt(2, i - LIVE);
                out.executeUpdate();
                c.commit();
                if (file != null) {
                    file.returned(writer, i);
                }
            }
        }
    }

    /**
     * The writes and truncations H2 made to one file, in order, and each writer's commits with the number
     * of them made before the commit returned. Only H2's saving thread writes a file, so the order is
     * the order they reached the file in.
     */
    private static final class Recording {
        /** A write ({@code bytes} null when only its place is kept) or a truncation to {@code at} ({@code length} -1). */
        private record Change(byte[] bytes, int length, long at) {
            boolean truncation() {
                return length < 0;
            }
        }

        private record Returned(int writer, int commit, int changesBefore) {
        }

        /** H2's two store header blocks at the start of the file, written again in place by design. */
        private static final long HEADER_BYTES = 2 * 4096;

        private final Path path;
        /** Whether each write's bytes are kept, for {@link #statesLacking}; else only where it went. */
        private final boolean bytes;
        private final List<Change> changes = new ArrayList<>();
        private final List<Returned> returned = new ArrayList<>();

        private Recording(Path path, boolean bytes) {
            this.path = path;
            this.bytes = bytes;
        }

        /** Every write with its bytes, so that each state can be rebuilt. */
        static Recording of(Path base) {
            return start(new Recording(Path.of(base + ".mv.db"), true));
        }

        /** Only where each write went, for {@link #writesIntoUsedSpace}. */
        static Recording positionsOf(Path base) {
            return start(new Recording(Path.of(base + ".mv.db"), false));
        }

        private static Recording start(Recording recording) {
            FilePathRec.register();
            String name = recording.path.toString();
            FilePathRec.setRecorder((op, file, written, at) -> {
                if (file.endsWith(name) && op == Recorder.WRITE) {
                    recording.changed(new Change(recording.bytes ? written.clone() : null, written.length, at));
                } else if (file.endsWith(name) && op == Recorder.TRUNCATE) {
                    recording.changed(new Change(null, -1, at));
                }
            });
            return recording;
        }

        /** The URL part after {@code jdbc:h2:}: H2's file system of production ({@code async:}), recorded. */
        String url() {
            String name = path.toString();
            return "rec:async:" + name.substring(0, name.length() - ".mv.db".length());
        }

        Path path() {
            return path;
        }

        synchronized void changed(Change change) {
            changes.add(change);
        }

        synchronized void returned(int writer, int commit) {
            returned.add(new Returned(writer, commit, changes.size()));
        }

        synchronized int states() {
            return changes.size();
        }

        /** Writes past the two header blocks that land inside what the file had held before, not at its end. */
        synchronized long writesIntoUsedSpace() {
            long end = 0;
            long into = 0;
            for (Change change : changes) {
                if (change.truncation()) {
                    end = Math.min(end, change.at());
                } else {
                    if (change.at() >= HEADER_BYTES && change.at() < end) {
                        into++;
                    }
                    end = Math.max(end, change.at() + change.length());
                }
            }
            return into;
        }

        /** The file after each change, opened as a restart opens it: what it lacks, or why it cannot be opened; {@code first}: stops at one. */
        synchronized List<String> statesLacking(boolean first) throws Exception {
            if (!bytes) {
                throw new IllegalStateException("recorded without the bytes written: Recording.of rebuilds states");
            }
            List<String> lacking = new ArrayList<>();
            byte[] file = new byte[0];
            long size = 0;
            int writers = returned.stream().mapToInt(Returned::writer).max().orElse(0) + 1;
            Path copy = path.resolveSibling("state.mv.db");
            for (int made = 1; made <= changes.size() && !(first && !lacking.isEmpty()); made++) {
                Change change = changes.get(made - 1);
                if (change.truncation()) {
                    size = change.at();
                    Arrays.fill(file, (int) Math.min(size, file.length), file.length, (byte) 0);
                } else {
                    long end = change.at() + change.bytes().length;
                    file = end > file.length ? Arrays.copyOf(file, (int) Math.max(end, 2L * file.length)) : file;
                    System.arraycopy(change.bytes(), 0, file, (int) change.at(), change.bytes().length);
                    size = Math.max(size, end);
                }
                int[] due = new int[writers];
                for (Returned r : returned) {
                    if (r.changesBefore() <= made) {
                        due[r.writer()] = Math.max(due[r.writer()], r.commit());
                    }
                }
                Files.write(copy, Arrays.copyOf(file, (int) size));
                String state = "after change " + made + " of " + changes.size();
                try {
                    int[] held = newestRows(copy, writers);
                    for (int w = 0; w < writers; w++) {
                        if (held[w] < due[w]) {
                            lacking.add(state + ": writer " + w + "'s newest row is " + held[w] + ", its commit " + due[w] + " had returned");
                        }
                    }
                } catch (SQLException e) {
                    if (!Arrays.stream(due).allMatch(commit -> commit == 0)) {
                        lacking.add(state + ": " + e);
                    }
                } finally {
                    Files.deleteIfExists(copy);
                }
            }
            return lacking;
        }

        private static int[] newestRows(Path copy, int writers) throws SQLException {
            String name = copy.toString().substring(0, copy.toString().length() - ".mv.db".length());
            int[] held = new int[writers];
            try (Connection c = DriverManager.getConnection("jdbc:h2:nio:" + name, "sa", "");
                 Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT writer, MAX(id) FROM rows_kept GROUP BY writer")) {
                while (rs.next()) {
                    held[rs.getInt(1)] = rs.getInt(2);
                }
            } catch (SQLException e) {
                if (e.getErrorCode() != ErrorCode.TABLE_OR_VIEW_NOT_FOUND_1
                    && e.getErrorCode() != ErrorCode.TABLE_OR_VIEW_NOT_FOUND_DATABASE_EMPTY_1) {
                    throw e;
                }
            }
            return held;
        }
    }
}
