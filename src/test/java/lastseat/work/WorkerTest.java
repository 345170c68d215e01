package lastseat.work;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/** The background loop's pace: a backlog worked off back to back, then the interval. */
@Tag("fast")
class WorkerTest {

    @Test
    void aTickThatMovedAFullBatchIsFollowedAtOnceAndOneThatDidNotWaitsItsInterval() throws Exception {
        AtomicInteger ticks = new AtomicInteger();
        CountDownLatch fourth = new CountDownLatch(1);
        Worker worker = Worker.start("test", Duration.ofHours(1), 10, () -> {
            int tick = ticks.incrementAndGet();
            if (tick == 4) {
                fourth.countDown();
            }
            return tick < 4 ? 10 : 3;
        });
        boolean reached;
        try {
            reached = fourth.await(10, TimeUnit.SECONDS);
        } finally {
            worker.close();
        }

        assertThat(reached).as("three full ticks, each followed at once by the next").isTrue();
        assertThat(ticks.get()).as("after a tick short of a batch, the hour's wait, ended by close").isEqualTo(4);
    }

    @Test
    void aWorkerWithoutABatchSizeWaitsItsIntervalAfterEveryTick() throws Exception {
        AtomicInteger ticks = new AtomicInteger();
        CountDownLatch first = new CountDownLatch(1);
        Worker worker = Worker.start("test", Duration.ofHours(1), () -> {
            ticks.incrementAndGet();
            first.countDown();
            return Integer.MAX_VALUE - 1;
        });
        boolean reached;
        try {
            reached = first.await(10, TimeUnit.SECONDS);
        } finally {
            worker.close();
        }

        assertThat(reached).isTrue();
        assertThat(ticks.get()).isEqualTo(1);
    }
}
