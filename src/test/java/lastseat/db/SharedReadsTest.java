package lastseat.db;

import lastseat.support.HeldConnection;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.support.Waits;
import lastseat.work.Deadline;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * {@link SharedReads} on a real pool of two connections: callers asking the same thing while a read
 * waits for its connection share it; a read already sent is never joined (its answer could predate a
 * caller's arrival: a key revoked, a seat sold meanwhile); every caller waits no longer than its own
 * deadline; and a joiner whose shared read ran out of the first caller's deadline tries again with its own.
 */
class SharedReadsTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("db.pool-size", "2", "db.connection-timeout", "10s"));

    @Test
    void callersAskingTheSameWhileAReadWaitsForAConnectionShareItAndAnotherQuestionReadsForItself() throws Exception {
        SharedReads<String, Integer> reads = new SharedReads<>(app.services().db());
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch taken = new CountDownLatch(2);
        CountDownLatch letGo = new CountDownLatch(1);
        List<Future<Integer>> same = new ArrayList<>();
        Future<Integer> other;
        try (ExecutorService callers = Executors.newVirtualThreadPerTaskExecutor()) {
            try {
                assertThat(HeldConnection.holdAll(app.services().db(), callers, taken, letGo)).as("both connections held").isTrue();
                for (int i = 0; i < 5; i++) {
                    same.add(callers.submit(() -> reads.read("event-1", soon(), c -> 40 + runs.incrementAndGet())));
                }
                Waits.until(() -> reads.waiting() == 1 && reads.joined() == 4, "one read waiting, four callers joined it");
                other = callers.submit(() -> reads.read("event-2", soon(), c -> 100 + runs.incrementAndGet()));
                Waits.until(() -> reads.waiting() == 2, "a read of another key waiting beside it");
            } finally {
                letGo.countDown();
            }
            List<Integer> answers = new ArrayList<>();
            for (Future<Integer> f : same) {
                answers.add(f.get());
            }
            assertThat(answers).as("one answer for the five").hasSize(5).containsOnly(answers.getFirst());
            assertThat(other.get()).as("another key's own read").isGreaterThan(100);
        }
        assertThat(runs.get()).as("reads run").isEqualTo(2);
        assertThat(reads.sent()).isEqualTo(2);
        assertThat(reads.waiting()).isZero();
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aReadAlreadySentIsNotJoinedSoALaterCallerSeesTheDatabaseAfterItArrived() throws Exception {
        SharedReads<String, Integer> reads = new SharedReads<>(app.services().db());
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch firstRunning = new CountDownLatch(1);
        CountDownLatch finishFirst = new CountDownLatch(1);
        try (ExecutorService callers = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Integer> first = callers.submit(() -> reads.read("key", soon(), c -> {
                int run = runs.incrementAndGet();
                firstRunning.countDown();
                Waits.quietly(finishFirst);
                return run;
            }));
            try {
                assertThat(firstRunning.await(5, TimeUnit.SECONDS)).as("the first read sent").isTrue();
                // Were a sent read joinable (kept in the table until it ends), this caller would wait for the
                // first read's answer — one taken before it arrived — and not end before it.
                Future<Integer> later = callers.submit(() -> reads.read("key", soon(), c -> runs.incrementAndGet()));
                assertThat(later.get(5, TimeUnit.SECONDS)).as("the later caller's own read, while the first is still open").isEqualTo(2);
                assertThat(first.isDone()).isFalse();
            } finally {
                finishFirst.countDown();
            }
            assertThat(first.get()).isEqualTo(1);
        }
        assertThat(reads.joined()).isZero();
        assertThat(reads.sent()).isEqualTo(2);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aJoinerWhoseSharedReadRanOutOfTheFirstCallersDeadlineTriesAgainWithItsOwn() throws Exception {
        SharedReads<String, Integer> reads = new SharedReads<>(app.services().db());
        CountDownLatch taken = new CountDownLatch(2);
        CountDownLatch letGo = new CountDownLatch(1);
        try (ExecutorService callers = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Integer> early;
            Future<Integer> patient;
            try {
                assertThat(HeldConnection.holdAll(app.services().db(), callers, taken, letGo)).as("both connections held").isTrue();
                early = callers.submit(() -> reads.read("key", Deadline.after(Duration.ofSeconds(2), System.nanoTime()), c -> 1));
                Waits.until(() -> reads.waiting() == 1, "the first caller's read waiting");
                patient = callers.submit(() -> reads.read("key", soon(), c -> 2));
                Waits.until(() -> reads.joined() == 1, "the second caller joined it");

                Throwable ranOut = catchThrowable(early::get);
                assertThat(ranOut).as("the first caller, at its 2 s").hasCauseInstanceOf(DatabaseBusy.class);
                Waits.until(() -> reads.waiting() == 1, "the second caller's own read waiting");
                assertThat(patient.isDone()).as("the second caller, still within its deadline").isFalse();
            } finally {
                letGo.countDown();
            }
            assertThat(patient.get()).as("its own read's answer").isEqualTo(2);
        }
        assertThat(reads.sent()).isEqualTo(1);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aJoinerWhoseOwnDeadlineComesFirstGivesUpByItWhileTheReadItJoinedStillWaits() throws Exception {
        SharedReads<String, Integer> reads = new SharedReads<>(app.services().db());
        CountDownLatch taken = new CountDownLatch(2);
        CountDownLatch letGo = new CountDownLatch(1);
        try (ExecutorService callers = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Integer> patient;
            try {
                assertThat(HeldConnection.holdAll(app.services().db(), callers, taken, letGo)).as("both connections held").isTrue();
                patient = callers.submit(() -> reads.read("key", soon(), c -> 1));
                Waits.until(() -> reads.waiting() == 1, "the patient caller's read waiting");

                // A caller that spent its time elsewhere first: its deadline ends long before the read it joins.
                long start = System.nanoTime();
                Throwable late = catchThrowable(() -> reads.read("key", Deadline.after(Duration.ofMillis(500), start), c -> 2));
                long waitedMs = (System.nanoTime() - start) / 1_000_000;

                assertThat(late).as("the hurried joiner").isInstanceOf(DatabaseBusy.class);
                assertThat(waitedMs).as("by its own deadline, not the 10 s of the read it joined").isLessThan(3000);
                assertThat(reads.joined()).isEqualTo(1);
                assertThat(patient.isDone()).as("the read joined still waits").isFalse();
            } finally {
                letGo.countDown();
            }
            assertThat(patient.get()).isEqualTo(1);
        }
        assertThat(reads.sent()).isEqualTo(1);
        Invariants.resourcesCameBack(app);
    }

    private static Deadline soon() {
        return Deadline.after(Duration.ofSeconds(10), System.nanoTime());
    }
}
