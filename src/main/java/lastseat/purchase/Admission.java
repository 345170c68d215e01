package lastseat.purchase;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntSupplier;

/**
 * How many purchases this process runs at once: places, each taken by one {@link Permit} and given
 * back when that permit is closed. There are never more than {@code capacity} places
 * ({@code purchase.max-in-flight}); a {@code limit} may allow fewer at any moment (the {@link Pace}
 * of the payments says how many can still get a permit in time), read again at every claim.
 *
 * <p>Contract: {@link #tryClaim()} never waits. It takes a place only when fewer than the limit are
 * taken — the check and the increment are one compare-and-set, so eight callers racing for the last
 * place get exactly one permit — and otherwise answers empty, having changed nothing.
 * {@link #claim(Duration)} may wait, at most its bound, for a place given back. A permit exists only
 * after a successful claim; closing it gives its one place back exactly once, however often
 * {@code close()} is called and from whichever thread. {@code 0 <= taken <= capacity} at every
 * moment; when the limit falls below the places taken, the next claims wait until enough come back.
 *
 * <p>Each permit is also "before its reservation" until {@link Permit#reserved()} or its close: a
 * purchase refused a place can wait, bounded, for the admitted ones ahead of it to have taken their
 * seats ({@link #awaitReservationsAhead}), so that it is told the truth (409, the seats are gone)
 * rather than 503 when they were about to go.
 *
 * <p>Hazard: a place comes back only through {@link Permit#close()}. A permit that is dropped
 * without being closed keeps its place for the life of the process, and enough of them refuse every
 * purchase; hold it in try-with-resources around exactly the work it admits. Never give a place back
 * by hand (there is deliberately no {@code release()} on this class): a failed claim has nothing to
 * return, and returning twice would let more work in than the capacity allows.
 *
 * <p>Scope: this protects this process's own resources (threads, pool connections, payment calls
 * waiting for the bulkhead) from a crowd. It decides nothing about seats. A second instance has its
 * own counter, and a restart starts a fresh one; the database alone decides who gets a seat.
 */
final class Admission {
    private final int capacity;
    private final IntSupplier limit;
    private final AtomicInteger taken = new AtomicInteger();
    private final AtomicInteger waiting = new AtomicInteger();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition placeBack = lock.newCondition();
    private final Condition reservationMade = lock.newCondition();
    private final AtomicInteger awaitingReservations = new AtomicInteger();
    private final AtomicLong sequence = new AtomicLong();
    private final ConcurrentSkipListSet<Long> unreserved = new ConcurrentSkipListSet<>();

    /** A fixed number of places. */
    Admission(int capacity) {
        this(capacity, () -> capacity);
    }

    /** At most {@code capacity} places, and at any moment at most what {@code limit} says (at least one). */
    Admission(int capacity, IntSupplier limit) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        }
        this.capacity = capacity;
        this.limit = limit;
    }

    /**
     * Takes one place if one is free under the limit, at once. Empty when none is: nothing was taken,
     * so there is nothing to give back.
     */
    Optional<Permit> tryClaim() {
        int allowed = limit();
        while (true) {
            int now = taken.get();
            if (now >= allowed) {
                return Optional.empty();
            }
            // Increment only from the value just seen: if another claim or release moved the count
            // in between, the set fails and we look again, so the check and the take are one step.
            if (taken.compareAndSet(now, now + 1)) {
                // The owner is made only here, after the place is ours; a failed claim makes none.
                return Optional.of(new Permit());
            }
        }
    }

    /**
     * Takes one place, waiting at most {@code bound} for one to be given back. Empty when none came in
     * time (nothing taken). The interrupt ends the wait and stays set.
     */
    Optional<Permit> claim(Duration bound) throws InterruptedException {
        Optional<Permit> permit = tryClaim();
        if (permit.isPresent() || bound.isZero() || bound.isNegative()) {
            return permit;
        }
        long until = System.nanoTime() + bound.toNanos();
        waiting.incrementAndGet();
        try {
            while (true) {
                lock.lockInterruptibly();
                try {
                    permit = tryClaim();
                    long left = until - System.nanoTime();
                    if (permit.isPresent() || left <= 0) {
                        return permit;
                    }
                    placeBack.awaitNanos(left);
                } finally {
                    lock.unlock();
                }
            }
        } finally {
            waiting.decrementAndGet();
        }
    }

    /** The admitted purchases now before their reservation, as a mark to wait for. */
    long mark() {
        return sequence.get();
    }

    /**
     * Waits, at most {@code bound}, until every purchase admitted up to {@code mark} has made its
     * reservation (or ended). True when they all have. The interrupt ends the wait and stays set.
     */
    boolean awaitReservationsAhead(long mark, Duration bound) throws InterruptedException {
        long until = System.nanoTime() + bound.toNanos();
        awaitingReservations.incrementAndGet();
        try {
            lock.lockInterruptibly();
            try {
                while (true) {
                    Long first = unreserved.ceiling(Long.MIN_VALUE);
                    if (first == null || first > mark) {
                        return true;
                    }
                    long left = until - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    // Woken by every reservation made while anyone waits; a crowd polling instead
                    // would take the CPU from the very reservations it waits for.
                    reservationMade.awaitNanos(left);
                }
            } finally {
                lock.unlock();
            }
        } finally {
            awaitingReservations.decrementAndGet();
        }
    }

    private void reservationMade(long number) {
        if (unreserved.remove(number) && awaitingReservations.get() > 0) {
            lock.lock();
            try {
                reservationMade.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /** The places allowed now: the limit, within 1..capacity. */
    int limit() {
        return Math.clamp(limit.getAsInt(), 1, capacity);
    }

    /** Places free now under the whole capacity; a reading for tests and gauges, never a reason to expect a claim to succeed. */
    int available() {
        return capacity - taken.get();
    }

    /** Purchases waiting for a place now. */
    int waiting() {
        return waiting.get();
    }

    /** Refused purchases waiting now for those admitted before them to make their reservations; a reading for tests. */
    int awaitingReservations() {
        return awaitingReservations.get();
    }

    int capacity() {
        return capacity;
    }

    private void placeGivenBack() {
        if (waiting.get() > 0) {
            lock.lock();
            try {
                placeBack.signal();
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * One taken place of its {@link Admission}. It cannot be made outside a successful claim and
     * cannot be copied; {@link #close()} gives the place back the first time and does nothing after.
     */
    final class Permit implements AutoCloseable {
        private final AtomicBoolean released = new AtomicBoolean();
        private final long number = sequence.incrementAndGet();
        private final long admittedAt = System.nanoTime();

        private Permit() {
            unreserved.add(number);
        }

        /** Its purchase has made its reservation (or been refused one): nobody needs to wait for it now. */
        void reserved() {
            reservationMade(number);
        }

        /** How long ago this place was taken. */
        Duration age() {
            return Duration.ofNanos(System.nanoTime() - admittedAt);
        }

        @Override
        public void close() {
            // Only the first close wins the flag, so an error path and try-with-resources that both
            // close the permit still give back one place, never two.
            if (released.compareAndSet(false, true)) {
                reservationMade(number);
                taken.decrementAndGet();
                placeGivenBack();
            }
        }
    }
}
