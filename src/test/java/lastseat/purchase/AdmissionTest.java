package lastseat.purchase;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The admission permit on its own: one place among eight contenders, one place back per permit
 * however it is closed, a place back when its holder is cancelled, nothing made by a failed claim.
 *
 * <p>The race is made to happen first (the unsafe check-then-decrement lets several contenders in),
 * so that the same barrier letting exactly one real claim through proves something.
 */
@Tag("fast")
class AdmissionTest {
    private static final int CONTENDERS = 8;
    private static final long WAIT_SECONDS = 5;

    @Test
    void aCheckThenDecrementLetsSeveralOfEightContendersTakeTheOnePlace() throws Exception {
        UnsafeCount unsafe = new UnsafeCount(1, new CyclicBarrier(CONTENDERS));

        List<Boolean> claims = together(i -> unsafe.tryClaim());

        // The race must really happen, or the next test proves nothing.
        assertThat(claims.stream().filter(won -> won).count())
                .as("contenders told yes for one place").isGreaterThan(1);
        assertThat(unsafe.available()).as("the count went below zero").isNegative();
    }

    @Test
    void eightContendersReleasedTogetherGetExactlyOnePermitAndThePlaceComesBack() throws Exception {
        Admission admission = new Admission(1);
        CyclicBarrier barrier = new CyclicBarrier(CONTENDERS);

        List<Optional<Admission.Permit>> claims = together(i -> {
            // The same meeting point as the unsafe count: all eight arrive at the claim together.
            barrier.await(WAIT_SECONDS, TimeUnit.SECONDS);
            return admission.tryClaim();
        });

        List<Admission.Permit> permits = claims.stream().flatMap(Optional::stream).toList();
        assertThat(permits).as("contenders given the one place").hasSize(1);
        assertThat(admission.available()).isZero();
        permits.forEach(Admission.Permit::close);
        assertThat(admission.available()).as("the place came back").isEqualTo(1);
    }

    @Test
    void closingAPermitManyTimesGivesBackExactlyOnePlace() {
        Admission admission = new Admission(2);
        Admission.Permit permit = admission.tryClaim().orElseThrow();
        Admission.Permit other = admission.tryClaim().orElseThrow();

        for (int i = 0; i < 5; i++) {
            permit.close();
        }

        assertThat(admission.available()).as("one place back for one permit, the other still held").isEqualTo(1);
        other.close();
        assertThat(admission.available()).as("every place back, none extra").isEqualTo(admission.capacity());
    }

    @Test
    void aCancelledTaskHoldingAPermitGivesItsPlaceBack() throws Exception {
        Admission admission = new Admission(1);
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch never = new CountDownLatch(1);
        ExecutorService executor = Executors.newSingleThreadExecutor();
        Future<?> task = executor.submit(() -> {
            try (Admission.Permit permit = admission.tryClaim().orElseThrow()) {
                holding.countDown();
                // Stands for the admitted work: it ends only by cancellation.
                never.await();
            }
            return null;
        });
        assertThat(holding.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("the task holds the permit").isTrue();
        assertThat(admission.available()).isZero();

        task.cancel(true);
        executor.shutdown();
        boolean ended = executor.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS);

        assertThat(ended).as("the cancelled task ended").isTrue();
        assertThat(task.isCancelled()).isTrue();
        assertThat(admission.available()).as("capacity back to full").isEqualTo(admission.capacity());
    }

    @Test
    void aFailedClaimMakesNoPermitAndLeavesTheCountAlone() {
        Admission admission = new Admission(1);
        Admission.Permit holder = admission.tryClaim().orElseThrow();

        Optional<Admission.Permit> refused = admission.tryClaim();

        assertThat(refused).as("no permit for a full admission").isEmpty();
        assertThat(admission.available()).as("the refusal took nothing").isZero();
        holder.close();
        assertThat(admission.available()).as("only the real holder's place came back, nothing for the refusal")
                                         .isEqualTo(admission.capacity());
    }

    /**
     * The bug the compare-and-set loop guards against: look at the count, let the others run (here
     * every contender meets at the barrier, so all of them have looked before any decrements), then
     * decrement on what was seen.
     */
    private static final class UnsafeCount {
        private final AtomicInteger available;
        private final CyclicBarrier gap;

        UnsafeCount(int capacity, CyclicBarrier gap) {
            this.available = new AtomicInteger(capacity);
            this.gap = gap;
        }

        boolean tryClaim() throws InterruptedException, BrokenBarrierException, TimeoutException {
            boolean free = available.get() > 0;               // 1. look
            gap.await(WAIT_SECONDS, TimeUnit.SECONDS);        // 2. anything here lets the others look too
            if (free) {                                       // 3. act on what was true at 1
                available.decrementAndGet();
                return true;
            }
            return false;
        }

        int available() {
            return available.get();
        }
    }

    @Test
    void aLimitBelowTheCapacityRefusesAndAWaiterGetsThePlaceGivenBack() throws Exception {
        java.util.concurrent.atomic.AtomicInteger limit = new java.util.concurrent.atomic.AtomicInteger(1);
        Admission admission = new Admission(10, limit::get);
        Admission.Permit holder = admission.tryClaim().orElseThrow();
        assertThat(admission.tryClaim()).as("the limit, not the capacity, is full").isEmpty();

        try (ExecutorService waiter = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Optional<Admission.Permit>> waiting = waiter.submit(() -> admission.claim(java.time.Duration.ofSeconds(WAIT_SECONDS)));
            while (admission.waiting() == 0) {
                Thread.sleep(1);
            }
            holder.close();
            Optional<Admission.Permit> got = waiting.get(WAIT_SECONDS, TimeUnit.SECONDS);

            assertThat(got).as("the place given back went to the waiter").isPresent();
            got.get().close();
        }
        assertThat(admission.claim(java.time.Duration.ofMillis(1))).as("a bounded wait with the place free").isPresent().get()
                .satisfies(Admission.Permit::close);
        assertThat(admission.available()).isEqualTo(admission.capacity());
        assertThat(admission.waiting()).isZero();
    }

    @Test
    void aRefusedPurchaseWaitsForTheReservationsOfThoseAdmittedBeforeItOnly() throws Exception {
        Admission admission = new Admission(10);
        Admission.Permit before = admission.tryClaim().orElseThrow();
        long mark = admission.mark();
        Admission.Permit after = admission.tryClaim().orElseThrow();

        assertThat(admission.awaitReservationsAhead(mark, java.time.Duration.ofMillis(20)))
                .as("the one admitted before has not reserved yet").isFalse();
        before.reserved();
        assertThat(admission.awaitReservationsAhead(mark, java.time.Duration.ofMillis(20)))
                .as("the one admitted after the mark is not waited for").isTrue();
        before.close();
        after.close();
        assertThat(admission.available()).isEqualTo(admission.capacity());
    }

    private interface Contender<T> {
        T run(int index) throws Exception;
    }

    /** Runs {@link #CONTENDERS} contenders on their own threads and waits, bounded, for all of them. */
    private static <T> List<T> together(Contender<T> contender) throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(CONTENDERS);
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int i = 0; i < CONTENDERS; i++) {
                int index = i;
                futures.add(threads.submit(() -> contender.run(index)));
            }
            List<T> results = new ArrayList<>();
            for (Future<T> future : futures) {
                results.add(future.get(WAIT_SECONDS, TimeUnit.SECONDS));
            }
            return results;
        } finally {
            threads.shutdownNow();
            assertThat(threads.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).as("contenders ended").isTrue();
        }
    }
}
