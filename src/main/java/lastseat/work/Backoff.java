package lastseat.work;

import java.time.Duration;
import java.util.random.RandomGenerator;

/**
 * The pause before trying again: doubling from {@code base}, capped at {@code max}, drawn uniformly
 * between half and all of it, so that things failing together do not come back together.
 */
public final class Backoff {
    private Backoff() {
    }

    /**
     * The pause after failed attempt {@code attempt} (1 for the first): {@code base × 2^(attempt-1)}
     * capped at {@code max}, drawn between half and all of it, in whole milliseconds.
     */
    public static Duration jittered(int attempt, Duration base, Duration max, RandomGenerator random) {
        // Past 40 doublings every sane base is far over any cap; stopping there keeps the product finite.
        int doublings = Math.min(Math.max(attempt - 1, 0), 40);
        long full;
        try {
            full = Math.min(Math.multiplyExact(base.toMillis(), 1L << doublings), max.toMillis());
        } catch (ArithmeticException e) {
            full = max.toMillis();
        }
        long half = full / 2;
        return Duration.ofMillis(half + random.nextLong(full - half + 1));
    }
}
