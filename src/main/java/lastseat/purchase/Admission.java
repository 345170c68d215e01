package lastseat.purchase;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How many purchases this process runs at once ({@code purchase.max-in-flight}): a fixed number of
 * places, each taken by one {@link Permit} and given back when that permit is closed.
 *
 * <p>Contract: {@link #tryClaim()} never waits. It takes a place only when one is free — the check
 * and the decrement are one compare-and-set, so eight callers racing for the last place get exactly
 * one permit — and otherwise answers empty, having created nothing and changed nothing. A permit
 * exists only after a successful claim; closing it gives its one place back exactly once, however
 * often {@code close()} is called and from whichever thread. {@code 0 <= available() <= capacity()}
 * at every moment.
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
    private final AtomicInteger available;

    Admission(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        }
        this.capacity = capacity;
        this.available = new AtomicInteger(capacity);
    }

    /**
     * Takes one place if one is free, at once. Empty when none is: nothing was taken, so there is
     * nothing to give back.
     */
    Optional<Permit> tryClaim() {
        while (true) {
            int free = available.get();
            if (free == 0) {
                return Optional.empty();
            }
            // Decrement only from the value just seen: if another claim or release moved the count
            // in between, the set fails and we look again, so the check and the take are one step.
            if (available.compareAndSet(free, free - 1)) {
                // The owner is made only here, after the place is ours; a failed claim makes none.
                return Optional.of(new Permit());
            }
        }
    }

    /** Places free now; a reading for tests and gauges, never a reason to expect a claim to succeed. */
    int available() {
        return available.get();
    }

    int capacity() {
        return capacity;
    }

    /**
     * One taken place of its {@link Admission}. It cannot be made outside a successful claim and
     * cannot be copied; {@link #close()} gives the place back the first time and does nothing after.
     */
    final class Permit implements AutoCloseable {
        private final AtomicBoolean released = new AtomicBoolean();

        private Permit() {
        }

        @Override
        public void close() {
            // Only the first close wins the flag, so an error path and try-with-resources that both
            // close the permit still give back one place, never two.
            if (released.compareAndSet(false, true)) {
                available.incrementAndGet();
            }
        }
    }
}
