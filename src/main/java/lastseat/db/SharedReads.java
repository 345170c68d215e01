package lastseat.db;

import lastseat.work.Deadline;

import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;

/**
 * Reads for requests, shared while they wait for a connection: a caller asking {@code key} while a
 * read of that key still waits for its connection takes that read's answer instead of queueing a read
 * of its own. In a burst every buyer comes with the shop's one API key and asks about the same event;
 * unshared, each queues its own read for the pool, ahead of the purchases that need it.
 *
 * <p>Contract: a read is joined only until its query is sent (it leaves this table as it takes its
 * connection), so its answer is the database's at a moment after every caller it answers arrived — as
 * fresh as a read of one's own. Every caller waits no longer than its own deadline: a joiner whose
 * deadline comes first gives up ({@link DatabaseBusy}); one whose shared read ran out of the first
 * caller's deadline tries again with what is left of its own. A failure reaches the leader and every
 * joiner, each as an exception of its own.
 *
 * <p>Hazard: only reads that say the same thing to every caller may share a key; and never keep an
 * answer past its read (a cache): a key revoked, or a seat sold, after a caller arrived must be seen.
 */
public final class SharedReads<K, V> {
    private final Database db;
    private final ConcurrentHashMap<K, CompletableFuture<V>> waiting = new ConcurrentHashMap<>();
    private final LongAdder sent = new LongAdder();
    private final LongAdder joined = new LongAdder();

    public SharedReads(Database db) {
        this.db = db;
    }

    /**
     * {@code work} for {@code key}, run on a connection waited for no later than {@code deadline} ({@code null}:
     * the pool's own bound), or shared (above).
     */
    public V read(K key, Deadline deadline, Database.SqlWork<V> work) {
        while (true) {
            CompletableFuture<V> mine = new CompletableFuture<>();
            CompletableFuture<V> waitingRead = waiting.putIfAbsent(key, mine);
            if (waitingRead == null) {
                return lead(key, mine, deadline, work);
            }
            joined.increment();
            try {
                return deadline == null ? waitingRead.get() : waitingRead.get(deadline.remaining().toNanos(), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                // The read joined came from a caller with a later deadline (one that waited elsewhere first).
                throw new DatabaseBusy(new SQLTransientConnectionException("no shared read answered by the deadline"));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DatabaseException(new SQLException("interrupted while waiting for a shared read", e));
            } catch (ExecutionException e) {
                switch (e.getCause()) {
                    // The first caller's deadline came first: this one may still have time for a read of its own.
                    case DatabaseBusy busy when deadline == null || !deadline.passed() -> {
                        continue;
                    }
                    // Each caller gets its own exception (the leader's, as the cause), with its own stack.
                    case DatabaseBusy busy -> throw new DatabaseBusy(busy);
                    case DatabaseException failed when failed.getCause() instanceof SQLException sql -> throw new DatabaseException(sql);
                    case Error error -> throw error;
                    case RuntimeException failure -> throw failure;
                    default -> throw new IllegalStateException(e.getCause());
                }
            }
        }
    }

    private V lead(K key, CompletableFuture<V> mine, Deadline deadline, Database.SqlWork<V> work) {
        try {
            V answer = db.read(deadline, c -> {
                // The query is sent from here on: a caller arriving now must read for itself.
                waiting.remove(key, mine);
                sent.increment();
                return work.run(c);
            });
            mine.complete(answer);
            return answer;
        } catch (RuntimeException | Error e) {
            waiting.remove(key, mine);
            mine.completeExceptionally(e);
            throw e;
        }
    }

    /** Reads sent to the database so far. */
    public long sent() {
        return sent.sum();
    }

    /** Callers so far that took another's read. */
    public long joined() {
        return joined.sum();
    }

    /** Reads waiting for a connection now, open to callers asking the same. */
    public int waiting() {
        return waiting.size();
    }
}
