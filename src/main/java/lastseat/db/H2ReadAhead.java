package lastseat.db;

import org.h2.mvstore.Chunk;
import org.h2.mvstore.DataUtils;
import org.h2.mvstore.FileStore;
import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * Reads into H2's page cache the live pages of the chunks a housekeeping pass is about to rewrite, before
 * the pass holds commits back ({@link H2CommitGate}): chosen as H2 2.5.252's {@code findOldChunks} chooses
 * them (emptiest and oldest first, up to the pass's budget of live bytes), so that the rewrite finds them
 * in memory instead of reading each from the file while no commit can end. It only reads; a page it
 * misses, or a choice that differs from H2's, is read by the rewrite as before.
 *
 * <p>Why: the pages a pass rewrites are the few still live in the emptiest chunks, which nothing has
 * touched for a while, and H2 puts every page it writes into the same cache, so they have mostly left it
 * by then; the rewrite read 700–2,000 of them a pass, one hand-off to the {@code async:} channel's thread
 * each, while every commit waited ({@code docs/BENCHMARKS.md}, session 35).
 *
 * <p>Hazard: it reads pages of chunks that only a pass frees, on the pass's own thread, before the pass
 * starts, so no chunk it reads can be freed and reused under it — until a server has run about 24.8 days,
 * when H2 may free chunks itself (the retention left as it is, docs/GUARANTEES.md). A page read from space
 * reused since fails H2's check of its chunk and offset (the read-ahead stops, nothing cached), and a position
 * in a dead chunk is never asked for again. It reaches into H2's private fields and methods; an H2 without
 * them reads nothing ahead, and the pass is as it was.
 */
final class H2ReadAhead {
    private static final Field CHUNKS;
    private static final Method TABLE_OF_CONTENTS;
    private static final Method REWRITABLE;
    private static final Method FILL_RATE;
    private static final Field OCCUPANCY;
    private static final Field PAGE_COUNT;
    private static final Method READ_PAGE;

    static {
        Field chunks = null;
        Method toc = null;
        Method rewritable = null;
        Method fillRate = null;
        Field occupancy = null;
        Field pageCount = null;
        Method readPage = null;
        try {
            chunks = FileStore.class.getDeclaredField("chunks");
            toc = FileStore.class.getDeclaredMethod("getToC", Chunk.class);
            rewritable = Chunk.class.getDeclaredMethod("isRewritable");
            fillRate = Chunk.class.getDeclaredMethod("getFillRate");
            occupancy = Chunk.class.getDeclaredField("occupancy");
            pageCount = Chunk.class.getDeclaredField("pageCount");
            readPage = MVMap.class.getDeclaredMethod("readPage", long.class);
            for (var member : List.of(chunks, toc, rewritable, fillRate, occupancy, pageCount, readPage)) {
                member.setAccessible(true);
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            chunks = null;
        }
        CHUNKS = chunks;
        TABLE_OF_CONTENTS = toc;
        REWRITABLE = rewritable;
        FILL_RATE = fillRate;
        OCCUPANCY = occupancy;
        PAGE_COUNT = pageCount;
        READ_PAGE = readPage;
    }

    private H2ReadAhead() {
    }

    /**
     * Reads the live pages of the chunks {@code MVStore.compact(belowFillPercent, liveBytes)} would rewrite now;
     * returns how many pages it read (most from the cache already, some from the file), zero when the
     * file is full enough that the pass rewrites nothing, or this H2 lacks what it needs.
     */
    static int pagesToBeRewritten(MVStore store, int belowFillPercent, long liveBytes) {
        FileStore<?> file = store.getFileStore();
        if (CHUNKS == null || file == null || store.isClosed() || file.getChunksFillRate() >= belowFillPercent) {
            return 0;
        }
        try {
            int read = 0;
            for (Chunk<?> chunk : emptiestAndOldest(store, file, liveBytes)) {
                long[] toc = (long[]) TABLE_OF_CONTENTS.invoke(file, chunk);
                if (toc == null) {
                    continue;
                }
                BitSet dead = (BitSet) ((BitSet) OCCUPANCY.get(chunk)).clone();
                int pages = Math.min((int) PAGE_COUNT.get(chunk), toc.length);
                for (int page = dead.nextClearBit(0); page < pages; page = dead.nextClearBit(page + 1)) {
                    MVMap<?, ?> map = store.getMap(DataUtils.getPageMapId(toc[page]));
                    if (map != null && !map.isClosed()) {
                        READ_PAGE.invoke(map, DataUtils.composePagePos(chunk.id, toc[page]));
                        read++;
                    }
                }
            }
            return read;
        } catch (InvocationTargetException | IllegalAccessException | RuntimeException e) {
            // Nothing is changed by a read that failed; the pass reads what it needs itself.
            return 0;
        }
    }

    /** H2's choice: fill × 1000 ÷ age, lowest first, the most of them whose live bytes fit {@code liveBytes}. */
    @SuppressWarnings("unchecked")
    private static List<Chunk<?>> emptiestAndOldest(MVStore store, FileStore<?> file, long liveBytes)
            throws InvocationTargetException, IllegalAccessException {
        long latest = file.lastChunkVersion() + 1;
        long current = store.getCurrentVersion();
        record Candidate(Chunk<?> chunk, long priority) {
        }
        // The least wanted on top, so that it is the one let go when the budget is passed.
        PriorityQueue<Candidate> kept = new PriorityQueue<>(Comparator.comparingLong(Candidate::priority).reversed()
                                                                     .thenComparing(c -> c.chunk().maxLenLive, Comparator.reverseOrder()));
        long total = 0;
        for (Chunk<?> chunk : new ArrayList<>(((Map<?, ? extends Chunk<?>>) CHUNKS.get(file)).values())) {
            // As H2: never the newest chunks, whose rewrite could chase itself.
            if (!(boolean) REWRITABLE.invoke(chunk) || chunk.version >= current - 1) {
                continue;
            }
            kept.add(new Candidate(chunk, (int) FILL_RATE.invoke(chunk) * 1000L / Math.max(1, latest - chunk.version)));
            total += chunk.maxLenLive;
            while (total > liveBytes && !kept.isEmpty()) {
                total -= kept.poll().chunk().maxLenLive;
            }
        }
        return kept.stream().map(Candidate::chunk).toList();
    }
}
