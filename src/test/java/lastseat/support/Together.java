package lastseat.support;

import java.time.Duration;
import java.util.List;
import java.util.function.IntFunction;

/**
 * {@link lastseat.drill.Together} for tests: {@code n} contenders released at one latch, at most
 * a minute, an interrupt turned into a failure.
 */
public final class Together {
    private Together() {
    }

    public static <T> List<T> run(int n, IntFunction<T> contender) {
        try {
            return lastseat.drill.Together.run(n, contender, Duration.ofMinutes(1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the contenders ran", e);
        }
    }
}
