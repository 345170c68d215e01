package lastseat.db;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import lastseat.config.DbConfig;
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
 */
public final class Database implements AutoCloseable {
    private final HikariDataSource pool;
    private final int finishedAtOpen;

    private Database(HikariDataSource pool, int finishedAtOpen) {
        this.pool = pool;
        this.finishedAtOpen = finishedAtOpen;
    }

    public static Database open(DbConfig config) {
        HikariConfig hikari = new HikariConfig();
        hikari.setPoolName("lastseat");
        hikari.setJdbcUrl(durable(config.url()));
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
        try (Connection repair = hikari.getJdbcUrl().startsWith("jdbc:h2:")
                ? java.sql.DriverManager.getConnection(hikari.getJdbcUrl(), config.user(), config.password()) : null) {
            finished = repair == null ? 0 : H2Leftovers.finish(repair);
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
        return new Database(pool, finished);
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
     * <p>And {@code REUSE_SPACE=FALSE}: every commit's chunk is appended at the end of the file. H2
     * 2.5.252 loses commits that had returned when a chunk goes into a hole the file has freed: the
     * store header it writes then names the chunk before, so an open after kill -9 cannot find the
     * newest chunks and falls back to an older state (its {@code RandomAccessStore.writeChunk} no longer
     * sets {@code lastChunk} before {@code writeStoreHeader}, as 2.4.240 did). A chunk at the end of
     * the file is found without the header. {@code bin/drill kill-commits} shows the loss with space
     * reused and none without. The price: the file never reuses space while it runs. (H2's other loss
     * on a kill, commits left half applied, is {@link H2Leftovers}'.)
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

    /** {@code url} with {@code ;name=value} added, unless the URL names that setting already (any case). */
    private static String unlessSet(String url, String name, String value) {
        return url.toUpperCase(java.util.Locale.ROOT).contains(name) ? url : url + ";" + name + "=" + value;
    }

    /**
     * {@code jdbc:h2:./data/x}, {@code jdbc:h2:~/x}, {@code jdbc:h2:/srv/x}: H2 opens a file for a URL
     * without a scheme (mem:, tcp:, async:…; a one-letter "scheme" is a Windows drive), so it needs the
     * same settings as a {@code file:} URL, or a kill loses commits.
     */
    private static boolean isPlainH2Path(String url) {
        return url.startsWith("jdbc:h2:") && !url.substring("jdbc:h2:".length()).matches("(?s)[A-Za-z][A-Za-z0-9]+:.*");
    }

    /** Each database says it its own way; an unknown one is left with its default. */
    private static String lockTimeoutSql(DbConfig config) {
        long millis = config.lockTimeout().toMillis();
        if (config.url().startsWith("jdbc:postgresql:")) {
            return "SET lock_timeout = " + millis;
        }
        if (config.url().startsWith("jdbc:h2:")) {
            return "SET LOCK_TIMEOUT " + millis;
        }
        return null;
    }

    /**
     * Runs {@code work} in one transaction: commit when it returns, roll back when it throws anything
     * at all. An {@link Error} (out of memory, a stack overflow) must roll back too: restoring
     * auto-commit on a connection with an open transaction commits it, half done.
     */
    public <T> T inTransaction(SqlWork<T> work) {
        try (Connection connection = pool.getConnection()) {
            connection.setAutoCommit(false);
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
        } catch (SQLException e) {
            throw failure(e);
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

    /** Runs {@code work} on one connection in auto-commit mode (reads, single statements). */
    public <T> T read(SqlWork<T> work) {
        try (Connection connection = pool.getConnection()) {
            return work.run(connection);
        } catch (SQLException e) {
            throw failure(e);
        }
    }

    /**
     * An exhausted pool, or a row lock not granted within db.lock-timeout, is overload: answered 503
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
