package lastseat.db;

import org.h2.engine.SessionLocal;
import org.h2.jdbc.JdbcConnection;
import org.h2.mvstore.MVStore;

import javax.sql.DataSource;
import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.logging.Logger;
import java.util.stream.Stream;

/**
 * Connections to an embedded H2 file on which no chunk of the file is written while a transaction is
 * half way through its end: commits and rollbacks that changed something run under a read lock, side by
 * side; chunks are written under the write lock, by the committers themselves. A commit returns once a
 * chunk begun after it ended has been written; one chunk serves every commit that ended before it.
 *
 * <p>Why: H2 2.5.252 writes a chunk from its maps' roots collected one map after another, while other
 * threads' commits go on turning their changes committed, map by map too. A commit caught in between
 * lands half in the chunk: its row's table entry committed, its index entry not yet. When the chunk also
 * holds its undo log from before it finished, the open after a kill finishes it ({@link H2Leftovers}).
 * But H2 drops an empty undo log at every open and makes it anew when its slot is next used, so after a
 * restart every undo log is collected after the tables: the chunk can hold the undo log already cleared
 * and the index entry still uncommitted, and no open ever finishes that commit — a row the table has and
 * its index lacks, for every transaction but the one that reuses the dead commit's slot
 * ({@code KillCommitsTest} found it; {@code CommitGateTest} makes it happen). To write the chunks itself,
 * the gate sets H2's commit delay below zero (no chunk written inside a commit, no background writer).
 *
 * <p>The price is measured in docs/BENCHMARKS.md: while a chunk is written, no commit can end.
 *
 * <p>Hazard: the gate holds only what passes through these connections. A write in auto-commit mode
 * commits inside its statement, outside the gate, and stays unwritten until the next commit's chunk;
 * once the schema is migrated, such a write is refused ({@link Database#write} and
 * {@link Database#inTransaction} are the ways to write). A statement that fails part way is undone inside
 * H2, outside the gate too: torn, it leaves an entry that reads as its old value to all but a transaction
 * reusing its slot. The gate never waits for a row lock while held: neither a commit nor a rollback does.
 */
final class H2CommitGate implements DataSource {
    // Per file, not per pool: two Databases on one file in one process share H2's store.
    private static final Map<MVStore, ReentrantReadWriteLock> GATES = Collections.synchronizedMap(new WeakHashMap<>());

    private final String url;
    private final String user;
    private final String password;
    private volatile boolean refuseWritesInAutoCommit;

    H2CommitGate(String url, String user, String password) {
        this.url = url;
        this.user = user;
        this.password = password;
    }

    /** Whether connections to {@code url} need the gate: an H2 file opened in this process. */
    static boolean needed(String url) {
        return url.startsWith("jdbc:h2:async:");
    }

    /**
     * From now on a write prepared in auto-commit mode is refused (an {@link SQLException} that says
     * so): it would commit inside its statement, outside the gate, and wait unwritten for the next
     * commit's chunk. Called once the schema is migrated (Flyway writes its history its own way).
     */
    void refuseWritesInAutoCommit() {
        refuseWritesInAutoCommit = true;
    }

    @Override
    public Connection getConnection() throws SQLException {
        return gated(DriverManager.getConnection(url, user, password));
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        return gated(DriverManager.getConnection(url, username, password));
    }

    private Connection gated(Connection h2) throws SQLException {
        if (!(h2.unwrap(JdbcConnection.class).getSession() instanceof SessionLocal session)) {
            return h2;
        }
        MVStore store = session.getDatabase().getStore().getMvStore();
        // Below zero: no chunk written inside a commit (H2 writes one there only at exactly zero), and
        // no background writer; the gate writes them. Each open of the file makes a new store.
        if (store.getAutoCommitDelay() >= 0) {
            store.setAutoCommitDelay(-1);
        }
        ReentrantReadWriteLock gate = GATES.computeIfAbsent(store, s -> new ReentrantReadWriteLock());
        return (Connection) Proxy.newProxyInstance(H2CommitGate.class.getClassLoader(), new Class<?>[] {Connection.class},
                                                   new Gated(this, h2, session, store, gate));
    }

    /**
     * Passes every call to the H2 connection. One that ends a transaction with changes runs under the
     * gate's read lock — ends run side by side — and a commit's then writes the chunk under its write
     * lock, which waits for every end under way and holds off new ones: every commit that ended before
     * is in the chunk whole, and the commit returns only once it is written.
     */
    private record Gated(H2CommitGate source, Connection h2, SessionLocal session, MVStore store, ReentrantReadWriteLock gate)
            implements InvocationHandler {
        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            return switch (method.getName()) {
                case "equals" -> proxy == args[0];
                case "hashCode" -> System.identityHashCode(proxy);
                case "commit" -> session.hasPendingTransaction() ? endThenWrite(method, args) : call(method, args);
                case "setAutoCommit" -> session.hasPendingTransaction() && (Boolean) args[0] ? endThenWrite(method, args) : call(method, args);
                case "rollback", "close" -> session.hasPendingTransaction() ? end(method, args) : call(method, args);
                case "prepareStatement" -> {
                    if (source.refuseWritesInAutoCommit && h2.getAutoCommit() && isWrite((String) args[0])) {
                        throw new SQLException("a write in auto-commit mode on an H2 file would be committed outside "
                                               + "H2CommitGate and not written until the next commit: run it in a transaction ("
                                               + args[0] + ")");
                    }
                    yield call(method, args);
                }
                default -> call(method, args);
            };
        }

        private static boolean isWrite(String sql) {
            String start = sql.stripLeading();
            return Stream.of("INSERT", "UPDATE", "DELETE", "MERGE")
                    .anyMatch(word -> start.regionMatches(true, 0, word, 0, word.length()));
        }

        private Object endThenWrite(Method method, Object[] args) throws Throwable {
            Object result;
            long ended;
            gate.readLock().lock();
            try {
                result = call(method, args);
                // No chunk is begun under the read lock: this version is the first to hold the commit.
                ended = store.getCurrentVersion();
            } finally {
                gate.readLock().unlock();
            }
            // Not interruptible, like the commit itself: a commit abandoned here would be lost, not undone.
            // A chunk begun since is written once the read lock is had again, and holds this commit:
            // many commits, one chunk.
            gate.readLock().lock();
            try {
                if (store.getCurrentVersion() > ended) {
                    return result;
                }
            } finally {
                gate.readLock().unlock();
            }
            gate.writeLock().lock();
            try {
                if (store.getCurrentVersion() == ended) {
                    store.commit();
                }
            } finally {
                gate.writeLock().unlock();
            }
            return result;
        }

        private Object end(Method method, Object[] args) throws Throwable {
            gate.readLock().lock();
            try {
                return call(method, args);
            } finally {
                gate.readLock().unlock();
            }
        }

        private Object call(Method method, Object[] args) throws Throwable {
            try {
                return method.invoke(h2, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
    }

    @Override
    public PrintWriter getLogWriter() {
        return DriverManager.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) {
        DriverManager.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) {
        DriverManager.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() {
        return DriverManager.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> type) throws SQLException {
        throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> type) {
        return false;
    }
}
