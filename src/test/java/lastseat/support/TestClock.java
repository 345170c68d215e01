package lastseat.support;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A clock the test moves by hand, so that backoffs and leases end when the test says and not after a
 * sleep. Starts at the current time (rows written by the app carry the real time) in whole
 * milliseconds, so stored timestamps compare exactly.
 */
public final class TestClock extends Clock {
    private final AtomicReference<Instant> now = new AtomicReference<>(Instant.now().truncatedTo(ChronoUnit.MILLIS));

    /** Moves to just past the real time (never back), so that rows the app wrote just now are due. */
    public void catchUp() {
        Instant real = Instant.now().truncatedTo(ChronoUnit.MILLIS).plusMillis(1);
        now.updateAndGet(t -> t.isBefore(real) ? real : t);
    }

    public void advance(Duration by) {
        now.updateAndGet(t -> t.plus(by));
    }

    @Override
    public Instant instant() {
        return now.get();
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        throw new UnsupportedOperationException("the test clock is UTC only");
    }
}
