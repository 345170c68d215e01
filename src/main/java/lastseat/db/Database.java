package lastseat.db;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.pool.HikariPool;
import lastseat.config.DbConfig;
import lastseat.work.Deadline;
import org.flywaydb.core.Flyway;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * The one authority for seats, purchases, idempotency keys and the outbox: a bounded HikariCP pool
 * over H2 (file) or PostgreSQL, migrated by Flyway at start.
 *
 * <p>Every conversation is short: no transaction stays open across a call to the outside world.
 * A {@link SQLException} leaves as an unchecked {@link DatabaseException}; a unique-key violation
 * is told apart by {@link #isUniqueViolation(SQLException)} because both databases use SQLState 23505.
 *
 * <p>Waits: a connection is waited for at most {@code db.connection-timeout} and a row lock at most
 * {@code db.lock-timeout}. Work done for a request before it has changed anything (its key's read, its
 * key's claim, the seats' read, the reservation) passes its {@link Deadline}, and then waits no longer
 * than the deadline leaves either (a row lock: what it left when the transaction began): past it, the
 * work is {@link DatabaseBusy} and changed nothing. Work that ends what a request began (a release, a
 * confirmation, letting go of a key) passes none: it must be written however late.
 */
public final class Database implements AutoCloseable {
    private final HikariDataSource pool;
    private final int finishedAtOpen;
    private final Dialect dialect;
    private final long connectionTimeoutMillis;
    private final long lockTimeoutMillis;
    private final boolean gated;

    private Database(HikariDataSource pool, int finishedAtOpen, DbConfig config) {
        this.pool = pool;
        this.gated = pool.getDataSource() instanceof H2CommitGate;
        this.finishedAtOpen = finishedAtOpen;
        this.dialect = Dialect.of(config.url());
        this.connectionTimeoutMillis = config.connectionTimeout().toMillis();
        this.lockTimeoutMillis = config.lockTimeout().toMillis();
    }

    public static Database open(DbConfig config) {
        HikariConfig hikari = new HikariConfig();
        hikari.setPoolName("lastseat");
        String url = cached(durable(config.url()), config.h2CacheMegabytes());
        if (url.startsWith("jdbc:h2:async:")) {
            fitsTheHeap(config.h2CacheMegabytes(), Runtime.getRuntime().maxMemory());
        }
        if (H2CommitGate.needed(url)) {
            hikari.setDataSource(new H2CommitGate(url, config.user(), config.password(), config.h2HousekeepingInterval()));
        } else {
            hikari.setJdbcUrl(url);
        }
        hikari.setUsername(config.user());
        hikari.setPassword(config.password());
        hikari.setMaximumPoolSize(config.poolSize());
        hikari.setMinimumIdle(Math.min(2, config.poolSize()));
        hikari.setConnectionTimeout(config.connectionTimeout().toMillis());
        hikari.setAutoCommit(true);
        hikari.setConnectionInitSql(lockTimeoutSql(config));
        int finished;
        HikariDataSource pool;
        // The repair runs before the pool opens its connections: nobody else may be inside a commit then.
        // Its connection stays open until the pool holds one (Hikari opens one as it is built): H2 closes
        // a database, compacting its file, with its last connection, and the pool would open it again.
        try (Connection repair = url.startsWith("jdbc:h2:")
                ? java.sql.DriverManager.getConnection(url, config.user(), config.password()) : null) {
            finished = repair == null ? 0 : H2Leftovers.finish(repair);
            if (H2CommitGate.needed(url)) {
                H2CommitGate.collectUndoLogsLast(repair);
            }
            pool = new HikariDataSource(hikari);
        } catch (SQLException e) {
            throw new DatabaseException(e);
        }
        try {
            Flyway.configure().dataSource(pool).locations("classpath:db/migration")
                    .javaMigrations(new V3__Payment_unresolved())
                    .load().migrate();
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
        if (hikari.getDataSource() instanceof H2CommitGate gate) {
            gate.refuseWritesInAutoCommit();
        }
        return new Database(pool, finished, config);
    }

    /** How many commits a stopped process left half applied this open finished (H2 only; see {@link H2Leftovers}). */
    public int finishedAtOpen() {
        return finishedAtOpen;
    }

    /**
     * How many parsed statements each H2 session keeps, by SQL text, for the databases whose URL this
     * class completes: an H2 file (opened through {@code async:}) or memory; a server's, or a URL with
     * another file system, keeps its own. H2 keeps 8 by default, fewer than one purchase
     * uses (about 25 different statements, and a pooled connection serves every kind of request), so
     * nearly every {@code prepareStatement} parsed and planned its SQL again: 8.8 % of the samples of an
     * overload's profile, and about 8 % of lastseat's CPU per purchase (docs/BENCHMARKS.md).
     */
    static final int H2_PARSED_STATEMENTS = 128;

    /**
     * H2 keeps committed changes in memory for up to half a second by default (WRITE_DELAY) and
     * has no redo log: a killed process would lose a commit it had already answered for — a
     * confirmation, or the PAYING that says a payment may have left. With WRITE_DELAY=0 every
     * commit is written to the file before it returns, by the committing thread. That thread may be
     * interrupted (a worker being stopped, a cancelled task), and an interrupted NIO FileChannel
     * closes itself, which H2 takes for a broken disk and closes the whole database; so the file is
     * opened through H2's {@code async:} file system (an AsynchronousFileChannel, which an interrupt
     * does not close; the interrupt stays set). A {@code jdbc:h2:file:} URL becomes
     * {@code jdbc:h2:async:…;WRITE_DELAY=0} — the same file; so does a URL that names a path with no
     * scheme ({@code jdbc:h2:./data/x}), which H2 opens as a file too. (H2 does not fsync: a power cut can still
     * lose the last commits; PostgreSQL is the answer there.)
     *
     * <p>And {@code REUSE_SPACE=FALSE}, so that H2 itself never puts a chunk into a hole the file has
     * freed: H2 2.5.252 then loses commits that had returned, because the store header it writes names
     * the chunk before, and an open after kill -9 cannot find the newest chunks and falls back to an
     * older state (its {@code RandomAccessStore.writeChunk} no longer sets {@code lastChunk} before
     * {@code writeStoreHeader}, as 2.4.240 did). A chunk at the end of the file is found without the
     * header. {@link H2CommitGate} turns reuse back on for the files it writes, with the header named
     * before each commit returns and dead chunks freed only by its housekeeping
     * ({@code db.h2-housekeeping-interval}); {@code bin/drill kill-commits} shows H2 alone losing
     * commits with space reused, and the service losing none. (H2's other loss on a kill, commits left
     * half applied, is {@link H2Leftovers}'.)
     */
    static String durable(String url) {
        String durable = url.startsWith("jdbc:h2:file:") ? "jdbc:h2:async:" + url.substring("jdbc:h2:file:".length())
                : isPlainH2Path(url) ? "jdbc:h2:async:" + url.substring("jdbc:h2:".length())
                : url;
        boolean file = durable.startsWith("jdbc:h2:async:");
        if (file) {
            durable = unlessSet(durable, "WRITE_DELAY", "0");
            durable = unlessSet(durable, "REUSE_SPACE", "FALSE");
        }
        if (file || durable.startsWith("jdbc:h2:mem:")) {
            durable = unlessSet(durable, "QUERY_CACHE_SIZE", Integer.toString(H2_PARSED_STATEMENTS));
        }
        if (durable.startsWith("jdbc:h2:")) {
            // H2's own shutdown hook would close the database while purchases still drain; Main closes the pool last.
            durable = unlessSet(durable, "DB_CLOSE_ON_EXIT", "FALSE");
        }
        return durable;
    }

    /**
     * An H2 file's URL ({@link #durable}) with its page cache set to {@code megabytes} ({@code CACHE_SIZE}), unless
     * the URL sets one. H2 puts every page it writes into that cache too, so with its own 16 MB the pages a
     * housekeeping pass rewrites (the few still live in the emptiest parts of the file) had mostly left it, and
     * the pass read them back from the file while it held every commit back
     * ({@code docs/BENCHMARKS.md}, "H2's page cache").
     *
     * <p>Hazard: the cache is heap, up to {@code megabytes} and a quarter more for the chunks' tables of contents,
     * and it spares the pass only pages that have not left it yet: where pages are written faster than the cache
     * turns over (tens of megabytes a second), a pass reads them back as before.
     */
    static String cached(String durable, int megabytes) {
        return durable.startsWith("jdbc:h2:async:") ? unlessSet(durable, "CACHE_SIZE", Integer.toString(megabytes * 1024)) : durable;
    }

    /**
     * Refuses a page cache that, with the quarter H2 adds for the chunks' tables of contents, would take more
     * than half of {@code maxHeapBytes}: it fills as the file grows, so it would run the process out of heap
     * only later, under load.
     */
    static void fitsTheHeap(int cacheMegabytes, long maxHeapBytes) {
        long cacheBytes = cacheMegabytes * 1024L * 1024L * 5 / 4;
        if (cacheBytes > maxHeapBytes / 2) {
            throw new IllegalStateException("Configuration db.h2-cache-megabytes must leave half the heap to the rest: "
                                            + cacheMegabytes + " MB (and a quarter more for H2's tables of contents) against a heap of "
                                            + maxHeapBytes / (1024 * 1024) + " MB (-Xmx)");
        }
    }

    /** {@code url} with {@code ;name=value} added, unless the URL names that setting already (any case). */
    private static String unlessSet(String url, String name, String value) {
        // ";NAME=", so that a setting whose name ends another's (CACHE_SIZE, QUERY_CACHE_SIZE) is not taken for it.
        return url.toUpperCase(java.util.Locale.ROOT).contains(";" + name + "=") ? url : url + ";" + name + "=" + value;
    }

    /**
     * {@code jdbc:h2:./data/x}, {@code jdbc:h2:~/x}, {@code jdbc:h2:/srv/x}: H2 opens a file for a URL
     * without a scheme (mem:, tcp:, async:…; a one-letter "scheme" is a Windows drive), so it needs the
     * same settings as a {@code file:} URL, or a kill loses commits.
     */
    private static boolean isPlainH2Path(String url) {
        return url.startsWith("jdbc:h2:") && !url.substring("jdbc:h2:".length()).matches("(?s)[A-Za-z][A-Za-z0-9]+:.*");
    }

    /**
     * Whether {@code SELECT ... FETCH FIRST n ROWS ONLY FOR UPDATE SKIP LOCKED} returns the first
     * {@code n} rows nobody else has locked, as PostgreSQL does. H2 2.5 cuts to {@code n} rows before
     * it skips the locked ones, so there a buyer behind {@code n} locked rows would see none.
     */
    public boolean skipsLockedRows() {
        return dialect == Dialect.POSTGRESQL;
    }

    /** Whether {@code url} is a PostgreSQL one, as this class tells databases apart. */
    public static boolean isPostgres(String url) {
        return Dialect.of(url) == Dialect.POSTGRESQL;
    }

    /** Each database says it its own way; an unknown one is left with its default. */
    private static String lockTimeoutSql(DbConfig config) {
        return Dialect.of(config.url()).lockTimeout(config.lockTimeout().toMillis());
    }

    /** How a database is told the longest wait for a row lock. */
    private enum Dialect {
        POSTGRESQL, H2, OTHER;

        static Dialect of(String url) {
            return url.startsWith("jdbc:postgresql:") ? POSTGRESQL : url.startsWith("jdbc:h2:") ? H2 : OTHER;
        }

        /** For the whole session; null for a database whose way is not known here. */
        String lockTimeout(long millis) {
            return switch (this) {
                case POSTGRESQL -> "SET lock_timeout = " + millis;
                case H2 -> "SET LOCK_TIMEOUT " + millis;
                case OTHER -> null;
            };
        }
    }

    /**
     * Runs {@code work} in one transaction: commit when it returns, roll back when it throws anything
     * at all. An {@link Error} (out of memory, a stack overflow) must roll back too: restoring
     * auto-commit on a connection with an open transaction commits it, half done.
     */
    public <T> T inTransaction(SqlWork<T> work) {
        return inTransaction(null, work);
    }

    /**
     * {@link #inTransaction(SqlWork)} for work that has changed nothing yet on behalf of a request due
     * by {@code deadline}: the wait for a connection and every wait for a row lock end at the deadline
     * at the latest, and a wait that ends there is {@link DatabaseBusy} (rolled back, nothing changed).
     */
    public <T> T inTransaction(Deadline deadline, SqlWork<T> work) {
        try {
            // On an H2 file the commit's wait for its chunk comes after the connection is back in the pool.
            return gated ? H2CommitGate.writtenAfter(() -> transaction(deadline, work)) : transaction(deadline, work);
        } catch (SQLException e) {
            throw failure(e);
        }
    }

    private <T> T transaction(Deadline deadline, SqlWork<T> work) throws SQLException {
        try (Connection connection = connection(deadline)) {
            connection.setAutoCommit(false);
            // On H2 the bound is the session's, so it is put back after the transaction; PostgreSQL's
            // SET LOCAL ends with the transaction by itself.
            boolean boundLocks = deadline != null && boundLocks(connection, deadline);
            try {
                return commitOrRollBack(connection, work);
            } finally {
                if (boundLocks && dialect == Dialect.H2) {
                    restoreLockTimeout(connection);
                }
            }
        }
    }

    /** Runs {@code work} in the transaction open on {@code connection}, ends it, and turns auto-commit back on. */
    private static <T> T commitOrRollBack(Connection connection, SqlWork<T> work) throws SQLException {
        boolean committed = false;
        try {
            T result = work.run(connection);
            connection.commit();
            committed = true;
            return result;
        } finally {
            // With a transaction still open, turning auto-commit on would commit it: only after an
            // ended transaction. A connection whose rollback failed goes back as it is; HikariCP
            // rolls it back (or evicts it) when it is returned.
            if (committed || rollBackQuietly(connection)) {
                restoreAutoCommitQuietly(connection);
            }
        }
    }

    /**
     * A pooled connection, waited for at most {@code db.connection-timeout} and, with a deadline, no
     * longer than it leaves (past it, one look for a free connection and no wait).
     */
    private Connection connection(Deadline deadline) throws SQLException {
        if (deadline == null) {
            return pool.getConnection();
        }
        long left = Math.min(connectionTimeoutMillis, deadline.remaining().toMillis());
        // HikariDataSource hands out its HikariPool as the MXBean (HikariCP 7); closed, its own call says so.
        if (pool.isClosed() || !(pool.getHikariPoolMXBean() instanceof HikariPool hikari)) {
            return pool.getConnection();
        }
        return hikari.getConnection(left);
    }

    /**
     * Lowers this transaction's wait for a row lock to what the deadline leaves, when that is less than
     * {@code db.lock-timeout}. True when it did. Past the deadline the wait is one millisecond: a lock
     * that is free is still taken, one that is held is not waited for.
     */
    private boolean boundLocks(Connection connection, Deadline deadline) throws SQLException {
        long left = Math.max(1, deadline.remaining().toMillis());
        if (left >= lockTimeoutMillis) {
            return false;
        }
        return switch (dialect) {
            case POSTGRESQL -> {
                try (var statement = connection.createStatement()) {
                    statement.execute("SET LOCAL lock_timeout = " + left);
                }
                yield true;
            }
            case H2 -> h2Session(connection).map(session -> {
                session.setLockTimeout((int) left);
                return true;
            }).orElse(false);
            case OTHER -> false;
        };
    }

    /** The session's lock wait back to {@code db.lock-timeout}. */
    private void restoreLockTimeout(Connection connection) {
        try {
            h2Session(connection).ifPresent(session -> session.setLockTimeout((int) lockTimeoutMillis));
        } catch (SQLException | RuntimeException e) {
            // A connection that cannot be asked is not reused with a short lock wait: it is closed.
            evictQuietly(connection);
        }
    }

    /**
     * The H2 session in this process behind a pooled connection; empty for one over the network. Its lock
     * wait is set on the session itself: H2's {@code SET LOCK_TIMEOUT} statement also marks every
     * session's parsed statements stale (it moves the database's modification id), so each would be
     * parsed again — the cost {@link #H2_PARSED_STATEMENTS} removed.
     */
    private static java.util.Optional<org.h2.engine.SessionLocal> h2Session(Connection connection) throws SQLException {
        return connection.unwrap(org.h2.jdbc.JdbcConnection.class).getSession() instanceof org.h2.engine.SessionLocal local
                ? java.util.Optional.of(local) : java.util.Optional.empty();
    }

    private void evictQuietly(Connection connection) {
        try {
            pool.evictConnection(connection);
        } catch (RuntimeException e) {
            // Evicting is best effort; the connection goes back as it is.
        }
    }

    /** Rolls back for a failure already on its way out, which a failing rollback must not hide. */
    private static boolean rollBackQuietly(Connection connection) {
        try {
            connection.rollback();
            return true;
        } catch (SQLException | RuntimeException e) {
            return false;
        }
    }

    /** The work has ended (committed or rolled back); a failure here is not the work's to report. */
    private static void restoreAutoCommitQuietly(Connection connection) {
        try {
            connection.setAutoCommit(true);
        } catch (SQLException | RuntimeException e) {
            // HikariCP resets the connection's state (or evicts it) when it is returned.
        }
    }

    /**
     * Runs {@code work} as one read-only REPEATABLE READ transaction: every statement sees the same
     * committed state (on PostgreSQL, statements of a READ COMMITTED transaction each see their own).
     */
    public <T> T snapshot(SqlWork<T> work) {
        try (Connection connection = pool.getConnection()) {
            int isolation = connection.getTransactionIsolation();
            connection.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            connection.setAutoCommit(false);
            try {
                return work.run(connection);
            } finally {
                connection.rollback();
                connection.setAutoCommit(true);
                connection.setTransactionIsolation(isolation);
            }
        } catch (SQLException e) {
            throw failure(e);
        }
    }

    /**
     * Runs {@code work} on one connection in auto-commit mode: reads. Writes go through {@link #write}
     * or {@link #inTransaction}: on an H2 file one in auto-commit would commit where {@link H2CommitGate}
     * cannot hold it, and is refused there.
     */
    public <T> T read(SqlWork<T> work) {
        return read(null, work);
    }

    /**
     * {@link #read(SqlWork)} for a request due by {@code deadline}: the wait for a connection ends at the
     * deadline at the latest ({@link DatabaseBusy}). A single statement in auto-commit holds no lock
     * between statements, so its own lock waits keep {@code db.lock-timeout}.
     */
    public <T> T read(Deadline deadline, SqlWork<T> work) {
        try (Connection connection = connection(deadline)) {
            return work.run(connection);
        } catch (SQLException e) {
            throw failure(e);
        }
    }

    /**
     * Runs {@code work} whose statements each stand alone, as in auto-commit mode: a statement that
     * fails undoes only itself, and the next one runs (a unique key taken, then a read of who took it).
     * On an H2 file the work is one transaction, committed through {@link H2CommitGate} at its end (H2
     * goes on with a transaction past a failed statement the same way); elsewhere auto-commit.
     */
    public <T> T write(SqlWork<T> work) {
        return write(null, work);
    }

    /** {@link #write(SqlWork)} for a request due by {@code deadline}: the wait for a connection as for {@link #read(Deadline, SqlWork)}. */
    public <T> T write(Deadline deadline, SqlWork<T> work) {
        try {
            if (!gated) {
                try (Connection connection = connection(deadline)) {
                    return work.run(connection);
                }
            }
            return H2CommitGate.writtenAfter(() -> {
                try (Connection connection = connection(deadline)) {
                    connection.setAutoCommit(false);
                    return commitOrRollBack(connection, work);
                }
            });
        } catch (SQLException e) {
            throw failure(e);
        }
    }

    /**
     * An exhausted pool, or a row lock not granted within db.lock-timeout (each, for work with a
     * deadline, no later than the deadline), is overload: answered 503
     * like other capacity limits (the transaction was rolled back, nothing changed). Anything else
     * is a failure.
     */
    private static RuntimeException failure(SQLException e) {
        boolean busy = e instanceof java.sql.SQLTransientConnectionException
                       || "55P03".equals(e.getSQLState())      // PostgreSQL lock_not_available
                       || e.getErrorCode() == 50200;           // H2 LOCK_TIMEOUT_1
        return busy ? new DatabaseBusy(e) : new DatabaseException(e);
    }

    public static boolean isUniqueViolation(SQLException e) {
        return "23505".equals(e.getSQLState());
    }

    public int activeConnections() {
        return pool.getHikariPoolMXBean().getActiveConnections();
    }

    public int poolSize() {
        return pool.getMaximumPoolSize();
    }

    @Override
    public void close() {
        pool.close();
    }

    @FunctionalInterface
    public interface SqlWork<T> {
        T run(Connection connection) throws SQLException;
    }
}
