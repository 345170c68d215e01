package lastseat.drills;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The money audit's bounds on a clock moved by hand: the 45 s a buyer may take is counted only while a
 * server is ready. Each case names a moment the bound must not have passed yet and the first moment it
 * has, so that a clock counting the restarts (the bound cut short, buyers failed while the server
 * warms up) or leaving out too much (a buyer waiting forever) fails here.
 */
class RunningTimeTest {
    private static final Duration BOUND = Duration.ofSeconds(45);

    private final AtomicLong nanos = new AtomicLong(1_000_000_000_000L);
    private final RunningTime running = new RunningTime(nanos::get);

    private void at(long seconds, long base) {
        nanos.set(base + Duration.ofSeconds(seconds).toNanos());
    }

    /** A kill at {@code from} whose restart is warm at {@code to}. */
    private void restart(long from, long to, long base) {
        at(from, base);
        running.whileDown(() -> {
            at(to, base);
            return null;
        });
    }

    @Test
    void withNoRestartTheBoundIsWallTime() {
        long t0 = nanos.get();
        RunningTime.Mark mark = running.mark();

        at(44, t0);
        assertThat(mark.ranFor(BOUND)).isFalse();
        at(45, t0);
        assertThat(mark.ranFor(BOUND)).isTrue();
        assertThat(running.downNanos()).isZero();
    }

    @Test
    void aRestartThatEndedDuringTheWaitDoesNotCount() {
        long t0 = nanos.get();
        RunningTime.Mark mark = running.mark();
        restart(10, 25, t0);

        at(59, t0);
        assertThat(mark.ranFor(BOUND)).as("44 s of a server ready").isFalse();
        at(60, t0);
        assertThat(mark.ranFor(BOUND)).isTrue();
        assertThat(running.downNanos()).isEqualTo(Duration.ofSeconds(15).toNanos());
    }

    @Test
    void aRestartStillUnderWayStopsTheClock() {
        long t0 = nanos.get();
        RunningTime.Mark mark = running.mark();
        at(30, t0);
        boolean passedWhileDown = running.whileDown(() -> {
            at(100, t0);
            return mark.ranFor(BOUND);
        });
        assertThat(passedWhileDown).as("30 s of a server ready, then 70 s restarting").isFalse();

        at(114, t0);
        assertThat(mark.ranFor(BOUND)).isFalse();
        at(115, t0);
        assertThat(mark.ranFor(BOUND)).isTrue();
    }

    @Test
    void restartsBeforeTheMarkAreNotTakenOffIt() {
        long t0 = nanos.get();
        restart(0, 20, t0);
        at(30, t0);
        RunningTime.Mark mark = running.mark();

        at(74, t0);
        assertThat(mark.ranFor(BOUND)).isFalse();
        at(75, t0);
        assertThat(mark.ranFor(BOUND)).as("45 s since the mark, all of them with a server ready").isTrue();
    }

    @Test
    void aMarkTakenDuringARestartCountsOnlyItsRest() {
        long t0 = nanos.get();
        at(10, t0);
        RunningTime.Mark mark = running.whileDown(() -> {
            at(15, t0);
            RunningTime.Mark during = running.mark();
            at(25, t0);
            return during;
        });

        at(69, t0);
        assertThat(mark.ranFor(BOUND)).as("10 s of the restart after the mark, 44 s ready").isFalse();
        at(70, t0);
        assertThat(mark.ranFor(BOUND)).isTrue();
    }

    @Test
    void severalRestartsAddUp() {
        long t0 = nanos.get();
        RunningTime.Mark mark = running.mark();
        for (int restart = 0; restart < 3; restart++) {
            restart(10L + 20 * restart, 25L + 20 * restart, t0);
        }

        at(89, t0);
        assertThat(mark.ranFor(BOUND)).as("three restarts of 15 s: 44 s ready").isFalse();
        at(90, t0);
        assertThat(mark.ranFor(BOUND)).isTrue();
        assertThat(running.downNanos()).isEqualTo(Duration.ofSeconds(45).toNanos());
    }

    @Test
    void aRestartThatFailsStillStartsTheClockAgain() {
        long t0 = nanos.get();
        RunningTime.Mark mark = running.mark();
        at(10, t0);
        assertThatThrownBy(() -> running.whileDown(() -> {
            at(25, t0);
            throw new IllegalStateException("the new server did not start");
        })).hasMessage("the new server did not start");

        assertThat(running.downNanos()).isEqualTo(Duration.ofSeconds(15).toNanos());
        at(60, t0);
        assertThat(mark.ranFor(BOUND)).as("the clock runs again after the failed restart").isTrue();
        assertThat(running.downNanos()).isEqualTo(Duration.ofSeconds(15).toNanos());
    }
}
