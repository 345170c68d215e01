package lastseat.db;

import org.h2.engine.SessionLocal;
import org.h2.jdbc.JdbcConnection;
import org.h2.mvstore.DataUtils;
import org.h2.mvstore.FileStore;
import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;
import org.h2.mvstore.RandomAccessStore;

import javax.sql.DataSource;
import java.io.PrintWriter;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.time.Duration;
import java.util.AbstractCollection;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.logging.Logger;

/**
 * Connections to an embedded H2 file on which no chunk of the file is collected while a transaction is
 * half way through its end: commits and rollbacks that changed something run under a read lock, side by
 * side; a chunk's contents are collected under the write lock, by one committer at a time, and H2
 * serializes and saves it on two threads of the gate's while commits go on ending. A commit returns once
 * a chunk collected after it ended has been saved; one chunk serves every commit that ended before it.
 * {@link Database} waits for that after its connection is back in the pool ({@link #writtenAfter}).
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
 * the gate sets H2's commit delay below zero (no chunk written inside a commit, no background writer)
 * and gives H2 the serializing and saving threads it otherwise makes only with its background writer.
 *
 * <p>The price is measured in docs/BENCHMARKS.md: while a chunk is collected, no commit can end. The
 * next chunk is collected once the one before is saved, so that it holds every commit that ended
 * meanwhile; collected at once instead, chunks of one or two commits each kept the serializer behind.
 *
 * <p>Space: the gate reuses the file's freed space (H2's own reuse loses commits; {@link HeaderKeeper}
 * says why). H2 frees no chunk by itself: its list of dead chunks is the gate's ({@link FreedByPasses}),
 * which gives them up only to a pass, whatever their age; a housekeeping pass, started by a commit at most every
 * {@code db.h2-housekeeping-interval}, rewrites the live pages of the emptiest chunks, saves and syncs
 * every chunk on its way, and only then frees the chunks nothing saved needs. Without it (interval zero,
 * or an H2 without the fields it needs) every chunk is appended and the file only grows.
 *
 * <p>Hazard: the gate holds only what passes through these connections. A write in auto-commit mode
 * commits inside its statement, outside the gate, and stays unwritten until the next commit's chunk;
 * once the schema is migrated, such a write is refused ({@link Database#write} and
 * {@link Database#inTransaction} are the ways to write). A statement that fails part way is undone inside
 * H2, outside the gate too: torn, it leaves an entry that reads as its old value to all but a transaction
 * reusing its slot. The gate never waits for a row lock while held: neither a commit nor a rollback does.
 * Statements do not pass the gate: a chunk may take one half way, which is safe only because every undo
 * log is collected after the maps its statement changes ({@link #collectUndoLogsLast}).
 */
final class H2CommitGate implements DataSource {
    // Per file, not per pool: two Databases on one file in one process share H2's store.
    private static final Map<MVStore, Gate> GATES = Collections.synchronizedMap(new WeakHashMap<>());
    /** H2's own fields for the threads that serialize and save a chunk; null when this H2 lacks them (chunks written inline). */
    private static final Field SERIALIZER;
    private static final Field SAVER;
    private static final String[] WRITES = {"INSERT", "UPDATE", "DELETE", "MERGE"};
    /** H2's registry of a store's open maps, whose order is the order a chunk's contents are collected in; null when this H2 lacks it. */
    private static final Field MAPS;
    /** The type of an undo log's values, which tells undo logs apart from the other maps. */
    private static final Class<?> UNDO_LOG_VALUES;
    /** H2's lock over saving chunks, its store header and the method that writes it; null when this H2 lacks them (space never reused). */
    private static final Field SAVE_CHUNK_LOCK;
    private static final Field STORE_HEADER;
    private static final Method WRITE_STORE_HEADER;
    /** H2's list of dead chunks, which its every store frees once they are older than the retention time; null when this H2 lacks it (space never reused). */
    private static final Field DEAD_CHUNKS;
    /** The header's key for the version of the chunk it names ({@code FileStore.HDR_VERSION}). */
    private static final String HEADER_VERSION = "version";
    /** Retention while space is reused: H2 frees no chunk younger than this (24.8 days); {@link FreedByPasses} holds back the older. */
    private static final int NEVER = Integer.MAX_VALUE;
    /** A housekeeping pass rewrites the live pages of the emptiest chunks while the file is less full than this, so that they die. */
    private static final int REWRITE_BELOW_FILL_PERCENT = 50;
    private static final int REWRITE_BYTES_PER_PASS = 2 * 1024 * 1024;

    static {
        Field serializer = null;
        Field saver = null;
        try {
            serializer = FileStore.class.getDeclaredField("serializationExecutor");
            saver = FileStore.class.getDeclaredField("bufferSaveExecutor");
            serializer.setAccessible(true);
            saver.setAccessible(true);
        } catch (ReflectiveOperationException | RuntimeException e) {
            serializer = null;
            saver = null;
        }
        SERIALIZER = serializer;
        SAVER = saver;
        Field maps = null;
        Class<?> undoLogValues = null;
        try {
            maps = MVStore.class.getDeclaredField("maps");
            maps.setAccessible(true);
            undoLogValues = Class.forName("org.h2.mvstore.tx.Record$Type", false, MVStore.class.getClassLoader());
            if (maps.getType() != ConcurrentHashMap.class) {
                maps = null;
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            maps = null;
        }
        MAPS = maps;
        UNDO_LOG_VALUES = undoLogValues;
        Field saveChunkLock = null;
        Field storeHeader = null;
        Method writeStoreHeader = null;
        try {
            saveChunkLock = FileStore.class.getDeclaredField("saveChunkLock");
            storeHeader = FileStore.class.getDeclaredField("storeHeader");
            writeStoreHeader = RandomAccessStore.class.getDeclaredMethod("writeStoreHeader");
            saveChunkLock.setAccessible(true);
            storeHeader.setAccessible(true);
            writeStoreHeader.setAccessible(true);
        } catch (ReflectiveOperationException | RuntimeException e) {
            saveChunkLock = null;
            storeHeader = null;
            writeStoreHeader = null;
        }
        SAVE_CHUNK_LOCK = saveChunkLock;
        STORE_HEADER = storeHeader;
        WRITE_STORE_HEADER = writeStoreHeader;
        Field deadChunks = null;
        try {
            deadChunks = FileStore.class.getDeclaredField("deadChunks");
            deadChunks.setAccessible(true);
            if (deadChunks.getType() != Deque.class) {
                deadChunks = null;
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            deadChunks = null;
        }
        DEAD_CHUNKS = deadChunks;
    }

    private final String url;
    private final String user;
    private final String password;
    private final long housekeepingNanos;
    private volatile boolean refuseWritesInAutoCommit;

    /** {@code housekeeping}: how often, at most, unused space is given back to new chunks; zero: never, every chunk appended. */
    H2CommitGate(String url, String user, String password, Duration housekeeping) {
        this.url = url;
        this.user = user;
        this.password = password;
        this.housekeepingNanos = housekeeping.toNanos();
    }

    /**
     * Makes {@code store} collect every undo log after every other map, from now on: called on the first
     * connection to a newly opened file, while nothing else uses it. A statement logs each change in its
     * transaction's undo log before it makes it; collected after the tables and indexes, the undo log in
     * a chunk then holds every change of an unfinished statement that the chunk holds, and the open after a
     * kill can undo all of it. Collected before them — H2 collects maps in the order of their ids modulo its
     * registry's size, and a new file's first undo logs are older than its tables, as are any after enough
     * restarts — a chunk could hold a statement's change to an index without its undo record: an entry
     * that stays uncommitted for good. The gate keeps transactions' ends whole; this keeps statements whole.
     *
     * @throws SQLException when this H2 has no such registry: the file is not opened rather than opened unsafe
     */
    static void collectUndoLogsLast(Connection h2) throws SQLException {
        if (!(h2.unwrap(JdbcConnection.class).getSession() instanceof SessionLocal session)) {
            return;
        }
        MVStore store = session.getDatabase().getStore().getMvStore();
        if (MAPS == null) {
            throw new SQLException("this H2 keeps its open maps where lastseat cannot order them (MVStore.maps): "
                                   + "an H2 file could keep a statement half written after a kill; use H2 2.5.252");
        }
        try {
            @SuppressWarnings("unchecked")
            ConcurrentHashMap<Integer, MVMap<?, ?>> maps = (ConcurrentHashMap<Integer, MVMap<?, ?>>) MAPS.get(store);
            if (!(maps instanceof UndoLogsLast)) {
                MAPS.set(store, new UndoLogsLast(maps));
            }
        } catch (IllegalAccessException | RuntimeException e) {
            throw new SQLException("could not order H2's open maps (MVStore.maps)", e);
        }
    }

    /**
     * H2's registry of a store's open maps, iterated with the undo logs after the other maps. Replaced
     * while one thread alone uses the store; H2 collects a chunk by iterating {@link #values()}.
     */
    private static final class UndoLogsLast extends ConcurrentHashMap<Integer, MVMap<?, ?>> {
        UndoLogsLast(Map<Integer, MVMap<?, ?>> maps) {
            super(maps);
        }

        @Override
        public Collection<MVMap<?, ?>> values() {
            return new AbstractCollection<>() {
                @Override
                public Iterator<MVMap<?, ?>> iterator() {
                    List<MVMap<?, ?>> undoLogs = new ArrayList<>();
                    List<MVMap<?, ?>> ordered = new ArrayList<>(size() + 1);
                    for (MVMap<?, ?> map : UndoLogsLast.super.values()) {
                        (map.getValueType().getClass() == UNDO_LOG_VALUES ? undoLogs : ordered).add(map);
                    }
                    ordered.addAll(undoLogs);
                    Iterator<MVMap<?, ?>> each = ordered.iterator();
                    return new Iterator<>() {
                        private MVMap<?, ?> last;

                        @Override
                        public boolean hasNext() {
                            return each.hasNext();
                        }

                        @Override
                        public MVMap<?, ?> next() {
                            last = each.next();
                            return last;
                        }

                        @Override
                        public void remove() {
                            UndoLogsLast.this.remove(last.getId(), last);
                        }
                    };
                }

                @Override
                public int size() {
                    return UndoLogsLast.this.size();
                }
            };
        }
    }

    /**
     * The commits made by the body {@link #writtenAfter} runs on this thread: they return as soon as H2
     * has them, and the body waits for their chunk once its connection is back in the pool.
     */
    private static final ThreadLocal<Unwritten> UNWRITTEN = new ThreadLocal<>();

    /** Work on pooled connections that ends by closing them. */
    @FunctionalInterface
    interface Body<T> {
        T run() throws SQLException;
    }

    /**
     * Runs {@code body}, whose commits through the gate return once H2 has them instead of once they are
     * written, then waits until every one of them is written: {@code body} closes its connection, so
     * the pool has it back while the commit waits for its chunk. Returns, or throws what {@code body}
     * threw, only after its commits are written; a chunk H2 failed to write fails this call as it would
     * have failed the commit. Nested, each body waits for its own commits.
     *
     * <p>Why: a commit waits for the next chunk, which takes as long as a housekeeping pass holds the
     * writer (hundreds of milliseconds during an on-sale); on the connection, that wait could empty the
     * pool, and every request's key read and every refused buyer's read waited with it. The commit is
     * visible to other connections as soon as H2 has it either way; only its caller waits for the file.
     *
     * <p>Hazard: between its commit and the wait, a kill can still lose the commit, so {@code body} does
     * nothing after committing but close its connection; nothing outside hears of the commit before
     * this returns.
     */
    static <T> T writtenAfter(Body<T> body) throws SQLException {
        Unwritten outer = UNWRITTEN.get();
        Unwritten mine = new Unwritten();
        UNWRITTEN.set(mine);
        T result;
        try {
            result = body.run();
        } catch (SQLException | RuntimeException | Error e) {
            try {
                mine.await();
            } catch (SQLException | RuntimeException unwritten) {
                e.addSuppressed(unwritten);
            }
            throw e;
        } finally {
            if (outer == null) {
                UNWRITTEN.remove();
            } else {
                UNWRITTEN.set(outer);
            }
        }
        mine.await();
        return result;
    }

    /** The newest commit a {@link #writtenAfter} body made and has not waited for yet. */
    private static final class Unwritten {
        private Gate gate;
        private long ended;

        /** Takes over the wait for a commit that ended at {@code ended}; false when it is another file's (waited for at once). */
        boolean take(Gate gate, long ended) {
            if (this.gate != null && this.gate != gate) {
                return false;
            }
            this.gate = gate;
            this.ended = Math.max(this.ended, ended);
            return true;
        }

        void await() throws SQLException {
            if (gate != null) {
                Gate waited = gate;
                gate = null;
                waited.awaitWritten(ended);
            }
        }
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
        Gate gate = GATES.computeIfAbsent(store, s -> Gate.of(s, housekeepingNanos));
        return (Connection) Proxy.newProxyInstance(H2CommitGate.class.getClassLoader(), new Class<?>[] {Connection.class},
                                                   new Gated(this, h2, session, store, gate));
    }

    /**
     * One file's gate. {@code ends} is read-locked by each end of a transaction and write-locked while a
     * chunk's contents are collected; {@code writer} is held by the committer that collects the next
     * chunk while the others wait to see whether it holds theirs, and by a housekeeping pass. The chunk is
     * then serialized and saved by H2 on {@code serializer} and {@code saver}, outside the lock (H2 does so
     * from the roots it collected, which later commits do not change), and a commit waits for both to have
     * done every chunk given to them so far. {@code collected}: the version after the last chunk this gate
     * collected. Without the two executors (an H2 without those fields) a chunk is written whole under the
     * lock, and appended.
     *
     * <p>Space is reused only when the saver is a {@link HeaderKeeper} (an H2 with what it needs, and
     * housekeeping on): H2 then frees no chunk by itself (retention {@link #NEVER}), and a
     * {@link #housekeep() pass}, at most every {@code housekeepingNanos}, frees the chunks that are dead in
     * what the file holds.
     */
    private static final class Gate {
        final MVStore store;
        final ReentrantReadWriteLock ends = new ReentrantReadWriteLock();
        final ReentrantLock writer = new ReentrantLock();
        final ThreadPoolExecutor serializer;
        final ThreadPoolExecutor saver;
        final AtomicLong collected = new AtomicLong(Long.MIN_VALUE);
        private final long housekeepingNanos;
        private final AtomicLong nextPass = new AtomicLong(System.nanoTime());
        private final ThreadPoolExecutor housekeeper;
        /** H2's dead chunks, kept for passes: null when space is not reused. */
        private final FreedByPasses dead;

        private Gate(MVStore store, ThreadPoolExecutor serializer, ThreadPoolExecutor saver, long housekeepingNanos, FreedByPasses dead) {
            this.store = store;
            this.serializer = serializer;
            this.saver = saver;
            this.housekeepingNanos = housekeepingNanos;
            this.dead = dead;
            this.housekeeper = saver instanceof HeaderKeeper ? oneThread("lastseat-h2-housekeeping") : null;
        }

        static Gate of(MVStore store, long housekeepingNanos) {
            ThreadPoolExecutor serializer = null;
            ThreadPoolExecutor saver = null;
            FileStore<?> file = store.getFileStore();
            FreedByPasses dead = housekeepingNanos > 0 && WRITE_STORE_HEADER != null && file instanceof RandomAccessStore
                    ? FreedByPasses.install(file) : null;
            boolean reuse = dead != null;
            if (SERIALIZER != null) {
                try {
                    // H2 makes them only with its background writer, which would write chunks outside the gate.
                    serializer = oneThread("lastseat-h2-serialize");
                    saver = reuse ? new HeaderKeeper((RandomAccessStore) file) : oneThread("lastseat-h2-save");
                    SERIALIZER.set(file, serializer);
                    SAVER.set(file, saver);
                } catch (IllegalAccessException | RuntimeException e) {
                    serializer = null;
                    saver = null;
                }
            }
            if (reuse && !(saver instanceof HeaderKeeper)) {
                // Without its own saver the gate cannot name chunks in the header: space is not reused, and H2 may
                // free dead chunks as it always does (it appends every chunk then, which is safe).
                dead.giveBack(file);
                dead = null;
            }
            if (saver instanceof HeaderKeeper) {
                // In this order: space reused while H2 still frees chunks by itself could put a chunk into a hole too soon.
                file.setRetentionTime(NEVER);
                file.setReuseSpace(true);
            }
            return new Gate(store, serializer, saver, housekeepingNanos, dead);
        }

        /** One daemon thread, gone when idle: H2 does not shut down executors it did not make. */
        private static ThreadPoolExecutor oneThread(String name) {
            ThreadPoolExecutor executor = new ThreadPoolExecutor(1, 1, 5, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), daemon(name));
            executor.allowCoreThreadTimeOut(true);
            return executor;
        }

        /** Whether a chunk collected after {@code version} is on its way: had again, the read lock waits for one being collected. */
        boolean collectedSince(long version) {
            ends.readLock().lock();
            try {
                return collected.get() > version;
            } finally {
                ends.readLock().unlock();
            }
        }

        /** Collects a chunk of all that ended before, unless one was collected since {@code ended}; H2 writes it. Holding {@code writer}. */
        void collect(long ended) {
            // H2 waits for its serializer with the interrupt ignored, and stops waiting: kept aside until the chunk is out.
            boolean interrupted = Thread.interrupted();
            ends.writeLock().lock();
            try {
                if (collected.get() <= ended) {
                    // Collected here, serialized and saved on H2's threads; below zero when this call stored nothing.
                    long stored = serializer != null ? store.tryCommit() : -1;
                    if (stored < 0) {
                        // Written here: no executors, nothing unsaved, or H2's store lock busy with a store of its
                        // own, which this waits for, so that its chunk is handed over before the wait for it.
                        store.commit();
                    }
                    collected.set(store.getCurrentVersion());
                }
            } finally {
                ends.writeLock().unlock();
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        /** Waits until every chunk handed to H2's threads so far is saved, and named by the header; a chunk H2 failed to write fails the commit. */
        void written() throws SQLException {
            if (serializer != null) {
                // Each is one thread, in order; the serializer hands a chunk to the saver before it ends.
                drain(serializer);
                drain(saver);
            }
            if (store.getPanicException() != null) {
                throw new SQLException("H2 could not write the commit to its file", store.getPanicException());
            }
            if (saver instanceof HeaderKeeper keeper && keeper.failure.get() != null) {
                throw new SQLException("H2 could not name its newest chunk in the file's header", keeper.failure.get());
            }
        }

        private static void drain(ThreadPoolExecutor executor) throws SQLException {
            Future<?> done;
            try {
                done = executor.submit(() -> { });
            } catch (RejectedExecutionException e) {
                return;   // shut down: H2 writes inline from then on
            }
            boolean interrupted = false;
            try {
                while (true) {
                    try {
                        done.get();
                        return;
                    } catch (InterruptedException e) {
                        interrupted = true;   // kept for the caller; the commit is not abandoned
                    } catch (ExecutionException e) {
                        throw new SQLException(e.getCause());
                    }
                }
            } finally {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        /**
         * Returns once a chunk holding the commit that ended at {@code ended} is written, collecting it
         * if no other committer is; then starts a housekeeping pass if one is due.
         */
        void awaitWritten(long ended) throws SQLException {
            // Not interruptible, like the commit itself: a commit abandoned here would be lost, not undone.
            while (!collectedSince(ended)) {
                if (writer.tryLock()) {
                    try {
                        // The chunks on their way are written first, while commits go on ending: the next
                        // chunk then holds all of them (many commits, one chunk).
                        written();
                        collect(ended);
                    } finally {
                        writer.unlock();
                    }
                    break;
                }
                // Another committer is collecting a chunk: wait for it, then see whether it holds this commit.
                writer.lock();
                writer.unlock();
            }
            written();
            housekeepIfDue();
        }

        /** Starts a housekeeping pass on its own thread when one is due; called after each commit. */
        void housekeepIfDue() {
            if (housekeeper == null) {
                return;
            }
            long now = System.nanoTime();
            long due = nextPass.get();
            if (now - due >= 0 && nextPass.compareAndSet(due, now + housekeepingNanos)) {
                try {
                    housekeeper.execute(this::housekeep);
                } catch (RejectedExecutionException e) {
                    // Not started; the next commit past the interval tries again.
                    nextPass.set(now);
                }
            }
        }

        /**
         * Frees the chunks that are dead in what the file holds, for new chunks to reuse. First reads the
         * pages it will rewrite into H2's cache ({@link H2ReadAhead}), holding nothing. Then holds
         * {@code writer}, so that no chunk is collected meanwhile: the live pages of the emptiest chunks are
         * rewritten and collected into a new chunk, so that those die too; every chunk on its way is saved
         * and the file synced; only then are dead chunks freed (retention zero for that moment). A chunk
         * freed is one no saved chunk needs, and the first chunk written into its space carries the layout
         * without it: a kill before that loses nothing, and neither does a power cut, since what made the
         * chunk dead was synced before it was freed.
         */
        void housekeep() {
            FileStore<?> file = store.getFileStore();
            // Before the lock: the rewrite below then finds its pages in memory while commits wait for it.
            H2ReadAhead.pagesToBeRewritten(store, REWRITE_BELOW_FILL_PERCENT, REWRITE_BYTES_PER_PASS);
            writer.lock();
            try {
                if (store.isClosed()) {
                    return;
                }
                written();
                file.setRetentionTime(0);
                try {
                    store.compact(REWRITE_BELOW_FILL_PERCENT, REWRITE_BYTES_PER_PASS);
                } finally {
                    file.setRetentionTime(NEVER);
                }
                collect(store.getCurrentVersion());
                written();
                store.sync();
                store.executeFilestoreOperation(() -> {
                    file.setRetentionTime(0);
                    dead.freeing = Thread.currentThread();
                    try {
                        file.dropUnusedChunks();
                    } finally {
                        dead.freeing = null;
                        file.setRetentionTime(NEVER);
                    }
                });
            } catch (SQLException | RuntimeException e) {
                // Left as it was, or H2 has panicked and every commit says so from now on: nothing to add.
            } finally {
                writer.unlock();
            }
        }
    }

    /** Daemon threads named {@code name}: a gate's threads must not keep the JVM alive. */
    private static ThreadFactory daemon(String name) {
        return r -> {
            Thread thread = new Thread(r, name);
            thread.setDaemon(true);
            return thread;
        };
    }

    /**
     * H2's list of dead chunks, put in place of its own: H2 frees the chunks it lists at the start of every
     * store, and this list gives them up only to the thread inside a housekeeping pass's
     * {@code dropUnusedChunks}, after the pass's fsync. So no chunk is freed whose death is not yet on disk,
     * whatever its age.
     *
     * <p>Why not only the retention time: H2 counts it in milliseconds in an {@code int}, so {@link #NEVER}
     * is about 24.8 days, and a chunk older than that (a file's chunk age counts from the file's creation,
     * across restarts) would be freed by any commit's store as soon as it died, before the fsync that a power
     * cut needs to find the file consistent. {@code ReusedSpaceTest} makes that happen.
     *
     * <p>Hazard: it relies on H2 taking chunks off this list with {@link #poll()} only, and on writing H2's
     * final field; an H2 or a JDK that refuses either leaves space unreused ({@link #install} returns null).
     */
    private static final class FreedByPasses extends ConcurrentLinkedDeque<Object> {
        /** The pass's thread while it frees chunks; null otherwise. */
        volatile Thread freeing;

        private FreedByPasses(Collection<?> listed) {
            super(listed);
        }

        /** Puts this list in place of H2's, with what H2 listed so far; null when this H2 or JDK does not let it. */
        static FreedByPasses install(FileStore<?> file) {
            if (DEAD_CHUNKS == null) {
                return null;
            }
            try {
                Deque<?> listed = (Deque<?>) DEAD_CHUNKS.get(file);
                FreedByPasses dead = new FreedByPasses(listed);
                DEAD_CHUNKS.set(file, dead);
                return dead;
            } catch (IllegalAccessException | RuntimeException e) {
                return null;
            }
        }

        /** Gives {@code file}, where this list was installed, its own list back, with what this one holds. */
        void giveBack(FileStore<?> file) {
            try {
                DEAD_CHUNKS.set(file, new ConcurrentLinkedDeque<>(this));
            } catch (IllegalAccessException | RuntimeException e) {
                // Left in place: dead chunks then stay listed, and the space they hold is not reused.
            }
        }

        @Override
        public Object poll() {
            return Thread.currentThread() == freeing ? super.poll() : null;
        }
    }

    /**
     * The thread that saves H2's chunks, which then has the store header name the chunk just saved,
     * before any commit waiting for it returns. H2 2.5.252 writes the header inside its chunk's write,
     * before it takes that chunk as its newest, so the header names the chunk before; a chunk put into a
     * hole the file freed, and not where the header's chunk predicted the next one, is then not found by
     * an open after a kill, and the commits it holds are lost ({@code ReusedSpaceTest} shows it). A
     * chunk appended at the end of the file is found without the header, which is why space was not
     * reused before. A header that cannot be written fails every commit from then on.
     */
    private static final class HeaderKeeper extends ThreadPoolExecutor {
        private final RandomAccessStore file;
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        HeaderKeeper(RandomAccessStore file) {
            super(1, 1, 5, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), daemon("lastseat-h2-save"));
            allowCoreThreadTimeOut(true);
            this.file = file;
        }

        @Override
        protected void afterExecute(Runnable task, Throwable thrown) {
            try {
                ReentrantLock saving = (ReentrantLock) SAVE_CHUNK_LOCK.get(file);
                saving.lock();
                try {
                    @SuppressWarnings("unchecked")
                    Map<String, ?> header = (Map<String, ?>) STORE_HEADER.get(file);
                    if (!file.isReadOnly() && DataUtils.readHexLong(header, HEADER_VERSION, 0) < file.lastChunkVersion()) {
                        WRITE_STORE_HEADER.invoke(file);
                    }
                } finally {
                    saving.unlock();
                }
            } catch (InvocationTargetException e) {
                failure.compareAndSet(null, e.getCause());
            } catch (IllegalAccessException | RuntimeException e) {
                failure.compareAndSet(null, e);
            }
        }
    }

    /**
     * Passes every call to the H2 connection. One that ends a transaction with changes runs under the
     * gate's read lock — ends run side by side — and a commit's then has a chunk collected under the
     * write lock, which waits for every end under way and holds off new ones: every commit that ended
     * before is in the chunk whole, and the commit returns only once the chunk is written — or, inside
     * {@link #writtenAfter}, at once, and the body waits for the chunk after closing its connection.
     */
    private record Gated(H2CommitGate source, Connection h2, SessionLocal session, MVStore store, Gate gate)
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

        /** Checked on every statement prepared in auto-commit (every read): no allocation beyond the strip. */
        private static boolean isWrite(String sql) {
            String start = sql.stripLeading();
            for (String word : WRITES) {
                if (start.regionMatches(true, 0, word, 0, word.length())) {
                    return true;
                }
            }
            return false;
        }

        private Object endThenWrite(Method method, Object[] args) throws Throwable {
            Object result;
            long ended;
            gate.ends.readLock().lock();
            try {
                result = call(method, args);
                // No chunk is collected under the read lock: this version is the first to hold the commit.
                ended = store.getCurrentVersion();
            } finally {
                gate.ends.readLock().unlock();
            }
            Unwritten unwritten = UNWRITTEN.get();
            if (unwritten == null || !unwritten.take(gate, ended)) {
                gate.awaitWritten(ended);
            }
            return result;
        }

        private Object end(Method method, Object[] args) throws Throwable {
            gate.ends.readLock().lock();
            try {
                return call(method, args);
            } finally {
                gate.ends.readLock().unlock();
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
