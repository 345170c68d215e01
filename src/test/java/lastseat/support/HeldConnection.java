package lastseat.support;

import lastseat.db.Database;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A pool connection held on purpose, so that a test can make the pool run dry: {@link #hold} takes
 * one, counts {@code taken} down, and keeps it until {@code letGo} (at most 10 s).
 *
 * <p>Hazard: a test that forgets {@code letGo.countDown()} starves its app for those 10 s; count it
 * down in a {@code finally}.
 */
public final class HeldConnection {
    private HeldConnection() {
    }

    /** Holds one of {@code db}'s connections until {@code letGo}; false when the wait ran out or was interrupted. */
    public static boolean hold(Database db, CountDownLatch taken, CountDownLatch letGo) {
        return db.read(c -> {
            taken.countDown();
            try {
                return letGo.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        });
    }

    /**
     * Holds {@code taken.getCount()} of {@code db}'s connections, each on a thread of {@code on}, until
     * {@code letGo}; true once all are held (within 5 s), false when they were not.
     */
    public static boolean holdAll(Database db, ExecutorService on, CountDownLatch taken, CountDownLatch letGo)
            throws InterruptedException {
        for (long i = taken.getCount(); i > 0; i--) {
            on.submit(() -> hold(db, taken, letGo));
        }
        return taken.await(5, TimeUnit.SECONDS);
    }
}
