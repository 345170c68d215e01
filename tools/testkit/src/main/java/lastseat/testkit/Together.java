package lastseat.testkit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntFunction;

/**
 * Contenders on virtual threads, released together by one latch so that they truly arrive at once
 * instead of by luck; used by the drills and the tests.
 *
 * <p>Contract: returns every contender's result in contender order, or throws; within {@code bound}
 * every contender has started and finished, or the rest are interrupted (cancelled) and awaited
 * before this throws. No contender outlives the call.
 */
public final class Together {
    private Together() {
    }

    /** {@link #run(int, IntFunction, Duration)} for a test: at most a minute, an interrupt turned into a failure. */
    public static <T> List<T> run(int n, IntFunction<T> contender) {
        try {
            return run(n, contender, Duration.ofMinutes(1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the contenders ran", e);
        }
    }

    public static <T> List<T> run(int n, IntFunction<T> contender, Duration bound) throws InterruptedException {
        CountDownLatch ready = new CountDownLatch(n);
        CountDownLatch go = new CountDownLatch(1);
        long until = System.nanoTime() + bound.toNanos();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<T>> futures = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int index = i;
                futures.add(threads.submit(() -> {
                    ready.countDown();
                    go.await();
                    return contender.apply(index);
                }));
            }
            try {
                if (!ready.await(until - System.nanoTime(), TimeUnit.NANOSECONDS)) {
                    throw new IllegalStateException("the " + n + " contenders did not all start within " + bound);
                }
                go.countDown();
                return results(futures, until, bound);
            } finally {
                futures.forEach(f -> f.cancel(true));
            }
        }
    }

    /** Runs {@code n} tasks, at most {@code concurrency} at a time, each started as soon as a slot is free. */
    public static <T> List<T> atMost(int concurrency, int n, IntFunction<T> task, Duration bound) throws InterruptedException {
        Semaphore slots = new Semaphore(concurrency);
        long until = System.nanoTime() + bound.toNanos();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<T>> futures = new ArrayList<>(n);
            try {
                for (int i = 0; i < n; i++) {
                    if (!slots.tryAcquire(until - System.nanoTime(), TimeUnit.NANOSECONDS)) {
                        throw new IllegalStateException("the " + n + " tasks did not all start within " + bound);
                    }
                    int index = i;
                    futures.add(threads.submit(() -> {
                        try {
                            return task.apply(index);
                        } finally {
                            slots.release();
                        }
                    }));
                }
                return results(futures, until, bound);
            } finally {
                futures.forEach(f -> f.cancel(true));
            }
        }
    }

    private static <T> List<T> results(List<Future<T>> futures, long until, Duration bound) throws InterruptedException {
        List<T> results = new ArrayList<>(futures.size());
        for (Future<T> future : futures) {
            try {
                results.add(future.get(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS));
            } catch (ExecutionException e) {
                throw new IllegalStateException("a contender failed: " + e.getCause(), e.getCause());
            } catch (TimeoutException e) {
                throw new IllegalStateException("the contenders did not all finish within " + bound, e);
            }
        }
        return results;
    }
}
