package lastseat.purchase;

import lastseat.work.Latency;

import java.time.Duration;
import java.util.function.Supplier;

/**
 * How much purchase work this process can take on and still finish it within the deadline, from
 * what it measured lately: the time from admission to the payment ({@code toPayment}, the reservation
 * and the checks) and the time a charge keeps its permit ({@code callTime}, from the payment gateway),
 * each a moving 90th percentile.
 *
 * <p>The payment permits are the narrow door: {@code permits / callTime} purchases a second get
 * through it. By Little's law, a purchase admitted now is through in {@code toPayment + wait +
 * callTime}, so {@link #limit()} admits {@code permits × (toPayment + callTime + queue) / callTime}
 * at once, where {@code queue} — the longest a purchase should wait at the bulkhead — is one call
 * time, or less when the deadline has no room for it. More would only wait at the bulkhead with
 * its seats held until the deadline cuts it (the 202s of an overload); fewer would leave permits idle.
 * A purchase refused a place may wait for one only as long as {@link #waitFor} says its own deadline
 * still has room after the whole path; a refused buyer whose seats may still go ({@link #roomToWait}) too.
 *
 * <p>Hazard: the figures are estimates from the recent past. When the provider slows past the
 * deadline, the limit falls to the permits themselves (no queue), never to nothing: purchases must
 * keep going through, or nothing would ever be measured again.
 */
final class Pace {
    private final Duration deadline;
    private final Duration margin;
    private final int permits;
    private final Latency toPayment;
    private final Supplier<Duration> callTime;

    /**
     * @param margin    what a purchase keeps in hand at the end for its confirmation and answer
     * @param toPayment learns the time from admission to the payment's start
     * @param callTime  how long a charge keeps its permit lately
     */
    Pace(Duration deadline, Duration margin, int permits, Latency toPayment, Supplier<Duration> callTime) {
        this.deadline = deadline;
        this.margin = margin;
        this.permits = permits;
        this.toPayment = toPayment;
        this.callTime = callTime;
    }

    /** What a purchase keeps in hand at the end of its deadline. */
    Duration margin() {
        return margin;
    }

    /** A purchase reached its payment this long after it was admitted. */
    void reachedPayment(Duration afterAdmission) {
        toPayment.record(afterAdmission);
    }

    /** The purchases that may be under way at once now. */
    int limit() {
        long call = callNanos();
        long path = path(call);
        long room = room(path);
        if (room < 0) {
            // Purchases miss the deadline already: admitting more would only make the way to the payment
            // longer (the time is spent here, for CPU and connections). Keep the permits fed, no more.
            return permits;
        }
        long planned = Math.ceilDiv(permits * (path + Math.min(room, call)), call);
        // A provider that answers much faster than the way to it is not the narrow door: this process's
        // CPU and connections are, and the formula would admit hundreds at once (with 0 ms stubs, ~240),
        // all slowing each other past the deadline. Twice the permits is what two cores carried through
        // a burst in time (docs/BENCHMARKS.md); a provider slower than the way to it never reaches it.
        return (int) Math.min(planned, MOST_PER_PERMIT * (long) permits);
    }

    /** The most purchases under way per payment permit, whatever the formula says. */
    static final int MOST_PER_PERMIT = 2;

    /**
     * How long a purchase that has spent {@code elapsed} of its deadline may wait for a place, as
     * {@code position} in the line of waiters: zero when the wait it can expect (one place comes back
     * every {@code callTime / permits}) would not leave it time for the whole path.
     */
    Duration waitFor(Duration elapsed, int position) {
        long call = callNanos();
        long path = path(call);
        long budget = room(path) - Math.clamp(room(path), 0, call) - elapsed.toNanos();
        long expected = Math.ceilDiv(call * position, permits);
        return budget > 0 && expected <= budget ? Duration.ofNanos(budget) : Duration.ZERO;
    }

    /**
     * How long a purchase with {@code left} of its work's time may wait for a place and still go the whole
     * path in time (to its payment, and through a call of the recent length, with the margin kept): zero
     * when it cannot.
     */
    Duration roomToWait(Duration left) {
        return Duration.ofNanos(Math.max(0, left.toNanos() - margin.toNanos() - path(callNanos())));
    }

    /**
     * Whether a purchase that has spent {@code elapsed} can still reach its payment with time for the
     * call, or fewer than the permits run ({@code running}): then it goes anyway, so that the payments
     * stay fed and the pace keeps being measured — a pace that refused everything would never learn
     * that things got better.
     */
    boolean canFinish(Duration elapsed, int running) {
        return running < permits || elapsed.toNanos() + toPayment.percentile().toNanos() + margin.toNanos() <= deadline.toNanos();
    }

    /** How long a charge keeps its permit lately, never zero (it divides). */
    private long callNanos() {
        return Math.max(1, callTime.get().toNanos());
    }

    /** The whole path of a purchase admitted now: to its payment, then a call of {@code callNanos}. */
    private long path(long callNanos) {
        return toPayment.percentile().toNanos() + callNanos;
    }

    /** The deadline's time beyond the path and the margin (negative when there is none). */
    private long room(long path) {
        return deadline.toNanos() - margin.toNanos() - path;
    }
}
