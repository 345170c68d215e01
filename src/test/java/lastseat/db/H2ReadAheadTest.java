package lastseat.db;

import org.h2.engine.SessionLocal;
import org.h2.jdbc.JdbcConnection;
import org.h2.mvstore.MVStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A housekeeping pass's rewrite reads its pages from the file unless {@link H2ReadAhead} read them first:
 * two H2 files made alike (rows written in many commits, most of them changed again, so the early chunks
 * are nearly empty), their page caches emptied, then the rewrite of the emptiest chunks
 * ({@code MVStore.compact}, as a pass calls it) on each — one straight away, one after the read-ahead.
 */
class H2ReadAheadTest {
    private static final int BELOW_FILL_PERCENT = 50;
    private static final long LIVE_BYTES = 2L * 1024 * 1024;
    private static final int ROWS = 3_000;

    @Test
    void aRewriteAfterTheReadAheadFindsItsPagesInMemoryInsteadOfReadingThemFromTheFile(@TempDir Path dir) throws SQLException {
        try (Connection straight = nearlyEmptyChunks(dir.resolve("straight"));
             Connection readAhead = nearlyEmptyChunks(dir.resolve("read-ahead"))) {
            MVStore withoutIt = store(straight);
            withoutIt.getFileStore().setCacheSize(16);   // empties the page cache
            long readsBefore = withoutIt.getFileStore().getReadCount();
            assertThat(withoutIt.compact(BELOW_FILL_PERCENT, (int) LIVE_BYTES)).as("something to rewrite").isTrue();
            long readByTheRewriteAlone = withoutIt.getFileStore().getReadCount() - readsBefore;

            MVStore withIt = store(readAhead);
            withIt.getFileStore().setCacheSize(16);
            int pagesReadAhead = H2ReadAhead.pagesToBeRewritten(withIt, BELOW_FILL_PERCENT, LIVE_BYTES);
            readsBefore = withIt.getFileStore().getReadCount();
            assertThat(withIt.compact(BELOW_FILL_PERCENT, (int) LIVE_BYTES)).as("something to rewrite").isTrue();
            long readByTheRewriteAfterIt = withIt.getFileStore().getReadCount() - readsBefore;

            assertThat(readByTheRewriteAlone).as("the failure this guards against: the rewrite reads from the file").isGreaterThan(100);
            assertThat(pagesReadAhead).isGreaterThan(100);
            assertThat(readByTheRewriteAfterIt).as("left to read after %d pages read ahead", pagesReadAhead)
                    .isLessThan(readByTheRewriteAlone / 10);
            assertThat(rows(straight)).isEqualTo(rows(readAhead)).isEqualTo(expectedRows());
        }
    }

    @Test
    void aFileFullEnoughHasNothingReadAhead(@TempDir Path dir) throws SQLException {
        try (Connection c = DriverManager.getConnection("jdbc:h2:nio:" + dir.resolve("full") + ";WRITE_DELAY=0;RETENTION_TIME=0", "sa", "")) {
            c.createStatement().execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(200))");
            c.createStatement().execute("INSERT INTO t VALUES (1, 'one')");
            assertThat(H2ReadAhead.pagesToBeRewritten(store(c), BELOW_FILL_PERCENT, LIVE_BYTES)).isZero();
        }
    }

    /** Rows written 10 to a commit, then two in three changed again, 10 to a commit: the first chunks are left mostly dead. */
    private static Connection nearlyEmptyChunks(Path file) throws SQLException {
        // No compaction at close nor by H2 itself (no background writer at WRITE_DELAY=0); chunks rewritable at once.
        Connection c = DriverManager.getConnection("jdbc:h2:nio:" + file + ";WRITE_DELAY=0;RETENTION_TIME=0;MAX_COMPACT_TIME=0", "sa", "");
        c.createStatement().execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(200))");
        c.setAutoCommit(false);
        try (PreparedStatement insert = c.prepareStatement("INSERT INTO t VALUES (?, ?)");
             PreparedStatement update = c.prepareStatement("UPDATE t SET v = ? WHERE id = ?")) {
            for (int id = 1; id <= ROWS; id++) {
                insert.setInt(1, id);
                insert.setString(2, "first " + "x".repeat(150) + id);
                insert.executeUpdate();
                if (id % 10 == 0) {
                    c.commit();
                }
            }
            for (int id = 1; id <= ROWS; id++) {
                if (id % 3 != 0) {
                    update.setString(1, "again " + id);
                    update.setInt(2, id);
                    update.executeUpdate();
                }
                if (id % 10 == 0) {
                    c.commit();
                }
            }
        }
        c.commit();
        c.setAutoCommit(true);
        return c;
    }

    private static String rows(Connection c) throws SQLException {
        try (ResultSet rs = c.createStatement().executeQuery("SELECT COUNT(*), SUM(LENGTH(v)), SUM(CASE WHEN v LIKE 'again %' THEN 1 ELSE 0 END) FROM t")) {
            rs.next();
            return rs.getLong(1) + " rows, " + rs.getLong(2) + " characters, " + rs.getLong(3) + " changed";
        }
    }

    private static String expectedRows() {
        long characters = 0;
        long changed = 0;
        for (int id = 1; id <= ROWS; id++) {
            String v = id % 3 != 0 ? "again " + id : "first " + "x".repeat(150) + id;
            characters += v.length();
            changed += id % 3 != 0 ? 1 : 0;
        }
        return ROWS + " rows, " + characters + " characters, " + changed + " changed";
    }

    private static MVStore store(Connection c) throws SQLException {
        return ((SessionLocal) c.unwrap(JdbcConnection.class).getSession()).getDatabase().getStore().getMvStore();
    }
}
