package lastseat.purchase;

import lastseat.work.Latency;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Admission's arithmetic on its own: how many purchases may run, how long one may wait for a place,
 * and when one is refused, from the measured time to the payment and the payment's call time.
 * (Figures as in the on-sale: 800 ms deadline, 50 ms margin, 20 permits.)
 */
@Tag("fast")
class PaceTest {
    private static final Duration DEADLINE = Duration.ofMillis(800);
    private static final Duration MARGIN = Duration.ofMillis(50);
    private static final int PERMITS = 20;

    private final Latency toPayment = new Latency(20, Duration.ofSeconds(10), 0.9, Duration.ofMillis(200));
    private final AtomicReference<Duration> callTime = new AtomicReference<>(Duration.ofMillis(200));
    private final Pace pace = new Pace(DEADLINE, MARGIN, PERMITS, toPayment, callTime::get);

    @Test
    void beforeAnythingIsMeasuredThePriorIsUsed() {
        measureToPayment(9, 10);

        assertThat(toPayment.percentile()).as("nine samples are not enough").isEqualTo(Duration.ofMillis(200));
    }

    @Test
    void theLimitIsThePermitsTimesThePathAndOneCallOfQueueOverTheCallTimeAndAtMostTwiceThePermits() {
        measureToPayment(20, 150);

        // 20 × (150 + 200 + 200) / 200 = 55, more than twice the permits: 40.
        assertThat(pace.limit()).isEqualTo(2 * PERMITS);
        callTime.set(Duration.ofMillis(1));
        assertThat(pace.limit()).as("a provider far faster than the way to it is not the narrow door").isEqualTo(2 * PERMITS);
    }

    @Test
    void aDeadlineWithLittleRoomAllowsLessQueue() {
        measureToPayment(20, 150);
        callTime.set(Duration.ofMillis(500));

        // room = 800 - 50 - 150 - 500 = 100 ms of queue, not a whole call: 20 × (650 + 100) / 500 = 30.
        assertThat(pace.limit()).isEqualTo(30);
        assertThat(pace.waitFor(Duration.ZERO, 1)).as("no room left to wait for a place").isZero();
    }

    @Test
    void whenPurchasesAlreadyMissTheDeadlineOnlyThePermitsRun() {
        measureToPayment(20, 700);

        assertThat(pace.limit()).isEqualTo(PERMITS);
        assertThat(pace.canFinish(Duration.ZERO, PERMITS)).as("700 + 50 <= 800: it can still reach its payment").isTrue();
        measureToPayment(20, 760);
        assertThat(pace.canFinish(Duration.ZERO, PERMITS)).isFalse();
        assertThat(pace.canFinish(Duration.ZERO, PERMITS - 1)).as("fewer than the permits run: it goes, to keep measuring").isTrue();
    }

    @Test
    void aPurchaseWaitsForAPlaceOnlyWhileItsDeadlineHasRoomForTheWholePath() {
        measureToPayment(20, 150);

        // room 400, one call (200) of it kept for the bulkhead: 200 ms of waiting for a place, less what was spent.
        assertThat(pace.waitFor(Duration.ZERO, 1)).isEqualTo(Duration.ofMillis(200));
        assertThat(pace.waitFor(Duration.ofMillis(150), 1)).isEqualTo(Duration.ofMillis(50));
        // A place comes back every 200 / 20 = 10 ms: the 21st in line expects 210 ms, more than the room.
        assertThat(pace.waitFor(Duration.ZERO, 20)).isEqualTo(Duration.ofMillis(200));
        assertThat(pace.waitFor(Duration.ZERO, 21)).isZero();
    }

    @Test
    void aRefusedBuyerWhoseSeatsMayStillGoWaitsForAPlaceOnlyWhileTheWholePathStillFitsAfterIt() {
        measureToPayment(20, 150);

        // 150 to the payment + 200 for the call + the 50 kept: with 700 ms of the work's time left, 300 ms to wait.
        assertThat(pace.roomToWait(Duration.ofMillis(700))).isEqualTo(Duration.ofMillis(300));
        assertThat(pace.roomToWait(Duration.ofMillis(400))).as("exactly the path left: no wait").isZero();
        assertThat(pace.roomToWait(Duration.ofMillis(100))).as("never negative").isZero();
        callTime.set(Duration.ofMillis(400));
        assertThat(pace.roomToWait(Duration.ofMillis(700))).as("a slower provider leaves less").isEqualTo(Duration.ofMillis(100));
    }

    @Test
    void aSlowerProviderLowersTheLimit() {
        measureToPayment(20, 150);
        int before = pace.limit();

        callTime.set(Duration.ofMillis(400));

        // room = 800 - 50 - 550 = 200: 20 × (550 + 200) / 400 = 38, down from 40.
        assertThat(pace.limit()).isLessThan(before).isEqualTo(38);
    }

    @Test
    void oldMeasurementsAreForgotten() throws InterruptedException {
        Latency shortMemory = new Latency(20, Duration.ofMillis(50), 0.9, Duration.ofMillis(200));
        for (int i = 0; i < 20; i++) {
            shortMemory.record(Duration.ofMillis(10));
        }
        assertThat(shortMemory.percentile()).isEqualTo(Duration.ofMillis(10));

        Thread.sleep(80);

        assertThat(shortMemory.percentile()).as("every sample older than the window: back to the prior").isEqualTo(Duration.ofMillis(200));
    }

    private void measureToPayment(int n, long millis) {
        for (int i = 0; i < n; i++) {
            toPayment.record(Duration.ofMillis(millis));
        }
        // The reading is refreshed at most every 20 ms; wait that out so the new samples are seen.
        try {
            Thread.sleep(25);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
