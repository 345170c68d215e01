package lastseat.bench;

import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import lastseat.work.Deadline;
import lastseat.work.Scoped;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * What the structure costs per purchase, apart from the waiting: one StructuredTaskScope with two
 * forks and a join (Scoped.both, as the checks run) against the same two calls made inline, and one
 * call through the payment bulkhead (Resilience4j, semaphore) against the call made directly. The
 * work inside is a few nanoseconds, so the figures are the overhead. Run by bin/bench.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-preview")
public class MicroBenchmarks {
    private final Bulkhead bulkhead = Bulkhead.of("bench", BulkheadConfig.custom()
            .maxConcurrentCalls(20).maxWaitDuration(Duration.ofMillis(800)).fairCallHandlingStrategyEnabled(true)
            .writableStackTraceEnabled(false).build());
    private final Supplier<Integer> decorated = Bulkhead.decorateSupplier(bulkhead, MicroBenchmarks::work);
    private int counter;

    private static int work() {
        return 42;
    }

    @Benchmark
    public int checksInOneScopeWithTwoForksAndAJoin() throws Exception {
        Deadline deadline = Deadline.after(Duration.ofSeconds(10), System.nanoTime());
        Scoped.Both<Integer, Integer> both = Scoped.both("bench", deadline, MicroBenchmarks::work, () -> ++counter);
        return both.first() + both.second();
    }

    @Benchmark
    public int checksInlineOneAfterTheOther() {
        return work() + ++counter;
    }

    @Benchmark
    public int oneCallThroughTheBulkhead() {
        return decorated.get();
    }

    @Benchmark
    public int oneCallDirect() {
        return work();
    }
}
