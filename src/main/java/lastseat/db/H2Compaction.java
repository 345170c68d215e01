package lastseat.db;

import com.zaxxer.hikari.HikariDataSource;
import lastseat.work.Worker;
import org.h2.engine.SessionLocal;
import org.h2.jdbc.JdbcConnection;
import org.h2.mvstore.MVStore;
import org.h2.mvstore.RandomAccessStore;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.logging.Logger;

/**
 * Gives an H2 file back the space its commits leave behind, while the database is open: the
 * housekeeping H2 does not do itself when every commit is written before it returns.
 *
 * <p>Why it is needed: H2's MVStore never overwrites a page in place. Each commit appends a chunk
 * holding every page it changed (the rows, and each index's path to its root); the pages it replaced
 * in older chunks become garbage. A chunk whose pages are all garbage is freed for reuse, but only
 * once it is older than the store's retention time (45 s by default); a chunk that keeps even one live
 * page (say the left half of a split index leaf, which nobody writes again) stays whole. Rewriting
 * those last live pages elsewhere, so that the old chunk dies, and moving chunks down so that the file
 * can be cut, is the work of the MVStore's background writer thread ({@code FileStore.writeInBackground}
 * → {@code RandomAccessStore.doHousekeeping}). That thread exists only with an auto-commit delay above
 * zero ({@code FileStore.setAutoCommitDelay}), and {@code WRITE_DELAY=0}, which {@link Database} needs
 * so that a commit is in the file when it returns, is exactly that delay at zero. So nothing ever
 * compacted: about 220 KB stayed in the file for each purchase, of which about 2 KB is live; closing
 * compacts for at most {@code MAX_COMPACT_TIME} (200 ms), far too little to catch up.
 *
 * <p>What it does, every {@code db.h2-compaction-interval}, with the MVStore's public operations:
 * <ol>
 *   <li>flushes the file to disk ({@code MVStore.sync}, an fsync, outside the store's lock). H2
 *       overwrites a chunk only once it is older than the retention time and assumes the disk has
 *       every earlier write by then; with a flush every interval, the retention time can be two
 *       intervals instead of 45 s (which would keep 45 s of commits, tens of MB under load);</li>
 *   <li>when the chunks are on average less than {@value #CHUNK_FILL_PERCENT}% live, rewrites the live
 *       pages of the emptiest ones (at most {@value #REWRITE_BYTES} bytes) and commits them; the old
 *       chunks are freed by the commits after;</li>
 *   <li>when less than {@value #FILE_FILL_PERCENT}% of the file is in use, moves chunks from its end
 *       into the holes (at most {@value #MOVE_BYTES} bytes) and cuts the file.</li>
 * </ol>
 * Steps 2 and 3 hold the store's lock, so a commit may wait for one of them: tens of milliseconds on
 * this project's shared two-core test machine (docs/BENCHMARKS.md). When nobody else committed since
 * the last pass, a pass does {@value #IDLE_FACTOR} times as much, and after {@value #IDLE_PASSES} such
 * passes (or one with nothing to do) the job waits for the next commit: an idle file is not rewritten
 * over and over.
 *
 * <p>What it keeps: a commit is still in the file before it returns; the job's own commit writes
 * what H2's background writer would (an open transaction's changes with its undo log, which recovery
 * rolls back). Closing interrupts a pass: H2 keeps the file open through it (the {@code async:} file
 * system of {@link Database}), a wait for the store's lock ends and the flag stays set. Only for an
 * embedded H2 file with no background writer of its own: PostgreSQL, an in-memory H2, an H2 server
 * and an H2 file opened with a WRITE_DELAY above zero are left alone.
 */
final class H2Compaction implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(H2Compaction.class.getName());
    static final int REWRITE_BYTES = 512 * 1024;
    static final int MOVE_BYTES = 1024 * 1024;
    static final int CHUNK_FILL_PERCENT = 80;
    static final int FILE_FILL_PERCENT = 90;
    static final int IDLE_FACTOR = 4;
    static final int IDLE_PASSES = 8;

    private final HikariDataSource pool;
    private final int retentionMillis;
    private final Worker worker;
    // Written by the worker's thread only (and before it starts).
    private MVStore store;
    private long versionAfterLastPass = -1;
    private int idlePasses;

    private H2Compaction(HikariDataSource pool, MVStore store, Duration interval) {
        this.pool = pool;
        this.store = store;
        this.retentionMillis = Math.toIntExact(interval.multipliedBy(2).toMillis());
        this.worker = Worker.start("h2-compaction", interval, this::pass);
    }

    /** The job for {@code pool}'s database, or null when it has nothing to do there (turned off, or not an H2 file H2 leaves alone). */
    static H2Compaction startIfNeeded(HikariDataSource pool, String url, Duration interval) {
        if (interval.isZero() || !url.startsWith("jdbc:h2:")) {
            return null;
        }
        MVStore store = fileStoreWithoutHousekeeping(pool);
        if (store == null) {
            return null;
        }
        LOG.fine(() -> "compacting the H2 file " + store.getFileStore().getFileName() + " every " + interval.toMillis() + " ms");
        return new H2Compaction(pool, store, interval);
    }

    /** The MVStore of an embedded H2 file that H2 does not compact itself, or null. */
    private static MVStore fileStoreWithoutHousekeeping(HikariDataSource pool) {
        try (Connection c = pool.getConnection()) {
            if (!(c.unwrap(JdbcConnection.class).getSession() instanceof SessionLocal session)) {
                return null;    // an H2 server: its own process owns the file
            }
            MVStore store = session.getDatabase().getStore().getMvStore();
            boolean ownHousekeeping = store.getFileStore() == null || store.getFileStore().getAutoCommitDelay() > 0;
            return !ownHousekeeping && store.getFileStore() instanceof RandomAccessStore ? store : null;
        } catch (SQLException e) {
            throw new DatabaseException(e);
        }
    }

    /** One pass; returns 1 when it rewrote or moved something, else 0. */
    private int pass() {
        if (store.isClosed()) {
            // H2 closes a database with its last connection; the pool may have opened it again since.
            store = fileStoreWithoutHousekeeping(pool);
            versionAfterLastPass = -1;
            if (store == null) {
                throw new IllegalStateException("the H2 database was opened again without a file to compact");
            }
        }
        boolean idle = store.getCurrentVersion() == versionAfterLastPass;
        idlePasses = idle ? idlePasses + 1 : 0;
        if (idlePasses > IDLE_PASSES) {
            return 0;
        }
        int factor = idle ? IDLE_FACTOR : 1;
        try {
            store.setRetentionTime(retentionMillis);
            store.sync();
            boolean rewritten = store.compact(CHUNK_FILL_PERCENT, factor * REWRITE_BYTES);
            if (rewritten) {
                store.commit();
            }
            RandomAccessStore file = (RandomAccessStore) store.getFileStore();
            long size = file.size();
            file.compactMoveChunks(FILE_FILL_PERCENT, (long) factor * MOVE_BYTES, store);
            boolean moved = file.size() != size;
            if (idle && !rewritten && !moved) {
                idlePasses = IDLE_PASSES;
            }
            versionAfterLastPass = store.getCurrentVersion();
            return rewritten || moved ? 1 : 0;
        } catch (RuntimeException e) {
            // MVStore.compact waits for the store's lock interruptibly, and wraps the InterruptedException.
            if (e.getCause() instanceof InterruptedException) {
                Thread.currentThread().interrupt();
                return 0;
            }
            throw e;
        }
    }

    /** Stops the job after the pass in progress; the pool is closed after this. */
    @Override
    public void close() {
        worker.close();
    }
}
