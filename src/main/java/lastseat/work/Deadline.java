package lastseat.work;

import java.time.Duration;

/**
 * The moment by which a purchase must be answered, on the monotonic clock. Every outside call and
 * every wait takes at most {@link #remaining()}.
 */
public record Deadline(long atNanos) {

    public static Deadline after(Duration budget, long startNanos) {
        return new Deadline(startNanos + budget.toNanos());
    }

    public Duration remaining() {
        return Duration.ofNanos(Math.max(0, atNanos - System.nanoTime()));
    }

    public boolean passed() {
        return atNanos - System.nanoTime() <= 0;
    }

    /**
     * The timeout for an outside call made inside a scope: the remaining time plus a little, so that
     * the scope's deadline (which interrupts the call) decides, and the call's own timeout is only the
     * backstop for a call that would not stop.
     */
    public Duration callTimeout() {
        return remaining().plus(BACKSTOP);
    }

    private static final Duration BACKSTOP = Duration.ofMillis(100);

    /** The remaining time, but no more than {@code cap} and never zero (HTTP timeouts refuse zero). */
    public Duration remainingAtMost(Duration cap) {
        Duration remaining = remaining();
        Duration bounded = remaining.compareTo(cap) < 0 ? remaining : cap;
        return bounded.isZero() ? Duration.ofMillis(1) : bounded;
    }
}
