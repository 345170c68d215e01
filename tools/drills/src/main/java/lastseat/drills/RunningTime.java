package lastseat.drills;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A clock that stops while no server is ready: the money audit counts its buyers' and its waits' bounds
 * on it, so that the time from a kill until the restarted server is warm does not count against them. A
 * restart warms up for about 15 s on two cores, and kills queue up behind one another: three of them
 * once took 44 s of a 45 s bound that counted them.
 *
 * <p>Contract: {@link Mark#ranFor} is true once {@code bound} has passed since the mark with a server
 * ready — wall time since the mark less every stretch spent in {@link #whileDown} that fell after it, the
 * one under way included, and nothing from before it.
 *
 * <p>Hazard: a reader between {@link #whileDown}'s last two writes counts that restart twice for a
 * moment. That makes a bound a little longer, never shorter, so no buyer is failed early; the writes are
 * not made atomic for it.
 */
final class RunningTime {
    private static final long READY = Long.MIN_VALUE;

    private final LongSupplier nanoClock;
    /** Time with no server ready, over the restarts that have ended. */
    private final AtomicLong downEnded = new AtomicLong();
    /** When the restart under way began, on {@link #nanoClock}; {@link #READY} while a server is ready. */
    private volatile long downSince = READY;

    RunningTime(LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
    }

    static RunningTime system() {
        return new RunningTime(System::nanoTime);
    }

    /**
     * Runs {@code restart} (a kill and the new server's start and warm-up) with the clock stopped, and starts
     * it again however {@code restart} ends. One restart at a time (the caller's lock).
     */
    <T> T whileDown(Supplier<T> restart) {
        long since = nanoClock.getAsLong();
        downSince = since;
        try {
            return restart.get();
        } finally {
            downEnded.addAndGet(nanoClock.getAsLong() - since);
            downSince = READY;
        }
    }

    /** Time so far with no server ready, the restart under way included. */
    long downNanos() {
        long since = downSince;
        return downEnded.get() + (since == READY ? 0 : nanoClock.getAsLong() - since);
    }

    /** Now, to count a bound from. */
    Mark mark() {
        return new Mark(nanoClock.getAsLong(), downNanos());
    }

    final class Mark {
        private final long at;
        private final long downAt;

        private Mark(long at, long downAt) {
            this.at = at;
            this.downAt = downAt;
        }

        /** Whether {@code bound} has passed since this mark with a server ready. */
        boolean ranFor(Duration bound) {
            long now = nanoClock.getAsLong();
            return now - at - (downNanos() - downAt) >= bound.toNanos();
        }
    }
}
