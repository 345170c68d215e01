package lastseat.db;

import lastseat.config.DbConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Real-parts tier (H2 files): an H2 file that reuses space keeps every commit that returned, as a kill
 * -9 would leave the file, only through {@link H2CommitGate}. One thread inserts a row per commit and
 * deletes the row {@value #LIVE} before it, so that chunks die and are freed; after each commit returns
 * the file is copied (what a kill leaves: the writes are in the page cache) and the copy is opened.
 *
 * <p>H2 2.5.252 alone, reusing space, writes a chunk into a hole while its store header names the chunk
 * before: the copy lacks the commit that had just returned. Through the gate, with its housekeeping
 * freeing space, every copy holds the last commit, and the file stays a fraction of what appending
 * every chunk makes it.
 */
class ReusedSpaceTest {
    private static final int LIVE = 50;
    private static final int COMMITS = 300;
    private static final String PAD = "x".repeat(400);

    @TempDir
    Path dir;

    @Test
    void h2AloneReusingSpaceLeavesAFileThatLacksTheCommitThatReturned() throws Exception {
        String url = "jdbc:h2:nio:" + dir.resolve("plain").toAbsolutePath() + ";WRITE_DELAY=0;REUSE_SPACE=TRUE;RETENTION_TIME=0";
        int lostAt = -1;
        try (Connection h2 = DriverManager.getConnection(url, "sa", "")) {
            h2.setAutoCommit(false);
            create(h2);
            for (int i = 1; i <= COMMITS && lostAt < 0; i++) {
                step(h2, i);
                h2.commit();
                if (lastRowInACopy(dir.resolve("plain.mv.db"), i) != i) {
                    lostAt = i;
                }
            }
        }
        assertThat(lostAt).as("a copy taken after a commit returned lacks it, within %d commits", COMMITS).isPositive();
    }

    @Test
    void throughTheGateEveryCopyHoldsTheLastCommitAndSpaceIsReused() throws Exception {
        long reusedBytes = gated(dir.resolve("reused"), Duration.ofMillis(100), true);
        long appendedBytes = gated(dir.resolve("appended"), Duration.ZERO, false);

        assertThat(reusedBytes).as("the file with space reused, against every chunk appended (%d bytes)", appendedBytes)
                .isLessThan(appendedBytes / 4);
    }

    /** {@value #COMMITS} commits through {@link Database}, each checked in a copy when {@code check}; returns the file's size at the end. */
    private long gated(Path at, Duration housekeeping, boolean check) throws Exception {
        Files.createDirectories(at);
        try (Database db = Database.open(new DbConfig("jdbc:h2:file:" + at.resolve("gated").toAbsolutePath(), "sa", "", 4,
                                                      Duration.ofSeconds(2), Duration.ofSeconds(2), housekeeping, 16))) {
            db.inTransaction(c -> {
                create(c);
                return null;
            });
            for (int i = 1; i <= COMMITS; i++) {
                int row = i;
                db.inTransaction(c -> {
                    step(c, row);
                    return null;
                });
                if (check) {
                    assertThat(lastRowInACopy(at.resolve("gated.mv.db"), i)).as("the newest row in a copy taken after commit %d returned", i)
                            .isEqualTo(i);
                }
            }
            long size = Files.size(at.resolve("gated.mv.db"));
            assertThat(db.activeConnections()).as("every connection back in the pool").isZero();
            return size;
        }
    }

    private static void create(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE rows_kept (id INT PRIMARY KEY, pad VARCHAR(400) NOT NULL)");
        }
    }

    /** Row {@code i} in, row {@code i - LIVE} out. */
    private static void step(Connection c, int i) throws SQLException {
        Sql.update(c, "INSERT INTO rows_kept (id, pad) VALUES (?, ?)", i, PAD);
        Sql.update(c, "DELETE FROM rows_kept WHERE id = ?", i - LIVE);
    }

    /** The newest row in a copy of {@code file} opened as a restart after a kill would open it; 0 when none, -1 without the table. */
    private int lastRowInACopy(Path file, int commit) throws Exception {
        Path copy = dir.resolve("copy-" + commit + ".mv.db");
        Files.copy(file, copy);
        String name = copy.toString().substring(0, copy.toString().length() - ".mv.db".length());
        try (Connection c = DriverManager.getConnection("jdbc:h2:nio:" + name, "sa", "");
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT COALESCE(MAX(id), 0) FROM rows_kept")) {
            rs.next();
            return rs.getInt(1);
        } catch (SQLException e) {
            if (e.getErrorCode() == org.h2.api.ErrorCode.TABLE_OR_VIEW_NOT_FOUND_1) {
                return -1;
            }
            throw e;
        } finally {
            Files.deleteIfExists(copy);
        }
    }
}
