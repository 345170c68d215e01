package lastseat.db;

import org.h2.engine.SessionLocal;
import org.h2.jdbc.JdbcConnection;
import org.h2.mvstore.tx.Transaction;
import org.h2.mvstore.tx.TransactionStore;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.logging.Logger;

/**
 * Finishes, when an embedded H2 file is opened, the commits a killed process left half applied: the
 * recovery H2 2.5.x skips.
 *
 * <p>Why it is needed: H2 commits a transaction in steps — it marks it committed in its undo log,
 * then turns its changes into committed values one by one, then clears the log. With every commit
 * written at once, another thread's commit may write the file between those steps, and a kill -9
 * then leaves a file with a committed transaction half applied: a row's table entry committed, its
 * index entries not. Opening the file is meant to finish it: H2 registers it as a leftover in state
 * COMMITTED and {@code Database.open} ends every leftover through {@code Transaction.commit()}. In
 * 2.5.250 and 2.5.252 that method does the work only for a transaction still active, so a committed
 * leftover is skipped without a word; 2.4.240 finished it. The transaction then stays open for good,
 * and its unfinished entries read as their old values on every open: a purchase whose table row says
 * PAYING while its index says HELD, or a row that a query through the index does not find at all.
 *
 * <p>What it does: on a connection of its own, before the pool and Flyway open theirs and before any
 * request, it finishes each leftover in state COMMITTED as 2.4.240 did ({@code TransactionStore.commit(t,
 * true)}), then also ends it ({@code Transaction.close}: frees its slot and stores the result, which
 * 2.4.240 left to the next commit). Both are package-private in H2, reached by reflection: an H2 without
 * them stops start-up with a sentence that says so, rather than opening a file that may hold half a
 * commit ({@code H2LeftoversTest} fails the build first). Other leftovers are H2's: an active one it
 * rolls back, a prepared one it keeps. The same calls on 400 files saved at a kill during 8 threads'
 * commits (docs/BENCHMARKS.md): 11 leftovers, 6 rows whose index disagreed with the table and one row
 * gone when opened as they were; none of either with them.
 *
 * <p>Hazard: H2 lists the live sessions' transactions with the leftovers, and one caught inside its own
 * commit is COMMITTED too; ending it from here would end it twice. So it acts only when its connection
 * is the database's one session — the database just opened by it — and otherwise leaves the leftovers
 * to whoever opened the database first in this process, which ran this then.
 */
final class H2Leftovers {
    private static final Logger LOG = Logger.getLogger(H2Leftovers.class.getName());
    private static final Method COMMIT;
    private static final Method CLOSE;
    private static final String MISSING;

    static {
        Method commit = null;
        Method close = null;
        String missing = null;
        try {
            commit = TransactionStore.class.getDeclaredMethod("commit", Transaction.class, boolean.class);
            close = Transaction.class.getDeclaredMethod("close", boolean.class, Throwable.class);
            commit.setAccessible(true);
            close.setAccessible(true);
        } catch (ReflectiveOperationException | RuntimeException e) {
            missing = e.toString();
        }
        COMMIT = commit;
        CLOSE = close;
        MISSING = missing;
    }

    private H2Leftovers() {
    }

    /** Finishes the committed leftovers of the embedded H2 database behind {@code c}; returns how many. */
    static int finish(Connection c) throws SQLException {
        if (!(c.unwrap(JdbcConnection.class).getSession() instanceof SessionLocal session)) {
            return 0;   // an H2 server: its own process opened the file
        }
        if (MISSING != null) {
            throw new IllegalStateException("this H2 (" + org.h2.engine.Constants.FULL_VERSION + ") lacks the methods lastseat "
                                            + "uses to finish commits a crash left half applied (" + MISSING + "); "
                                            + "see H2Leftovers before running on it");
        }
        if (session.getDatabase().getSessionCount() > 1) {
            return 0;
        }
        TransactionStore store = session.getDatabase().getStore().getTransactionStore();
        int finished = 0;
        for (Transaction t : store.getOpenTransactions()) {
            if (t.getStatus() == Transaction.STATUS_COMMITTED) {
                try {
                    COMMIT.invoke(store, t, true);
                    CLOSE.invoke(t, true, null);
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                } catch (InvocationTargetException e) {
                    throw new IllegalStateException("finishing a commit a crash left half applied failed", e.getCause());
                }
                finished++;
            }
        }
        if (finished > 0) {
            int count = finished;
            LOG.warning(() -> "finished " + count + " commit(s) a stopped process left half applied in the H2 file");
        }
        return finished;
    }
}
