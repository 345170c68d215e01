package lastseat.support;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/** Bounded waits for tests that hold a resource on purpose: never a sleep for luck, always a condition with a bound. */
public final class Waits {
    private Waits() {
    }

    /**
     * Waits at most 10 s for {@code latch}, inside work that cannot throw {@link InterruptedException} (a
     * database callback); an interrupt ends the wait and stays set, and the caller's assertions then fail.
     */
    public static void quietly(CountDownLatch latch) {
        try {
            latch.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Polls {@code condition} every 5 ms until it holds; fails after 5 s, naming {@code what} was expected. */
    public static void until(BooleanSupplier condition, String what) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("expected " + what).isLessThan(until);
            Thread.sleep(5);
        }
    }
}
