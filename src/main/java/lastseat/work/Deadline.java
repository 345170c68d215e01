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
}
