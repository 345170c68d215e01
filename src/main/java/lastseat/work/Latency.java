package lastseat.work;

import java.time.Duration;
import java.util.Arrays;

/**
 * A moving percentile of how long something took lately: the last {@code samples} durations, each
 * forgotten once it is older than {@code window}. Before {@code minSamples} recent durations are
 * known it answers {@code prior}, so a server started seconds ago decides from a stated guess, then
 * from what it measured.
 *
 * <p>Contract: {@link #record} never blocks for long and never fails; {@link #percentile()} is a
 * reading at most {@link #REFRESH} old, cheap enough to call on every request.
 *
 * <p>Hazard: it only learns from what is recorded. A caller that records only the quick successes
 * (and not the calls cut at a deadline) sees a faster world than the one it lives in; record the
 * time spent, whatever the ending.
 */
public final class Latency {
    /** How old a computed percentile may be before the next reading sorts the samples again. */
    static final Duration REFRESH = Duration.ofMillis(20);
    private static final int MIN_SAMPLES = 10;

    private final long[] nanos;
    private final long[] at;
    private final long windowNanos;
    private final double quantile;
    private final long priorNanos;
    private int next;
    private int size;
    private long cachedAt;
    private long cached;

    /** A measure as the configuration declares it ({@code config.admission()}). */
    public static Latency of(lastseat.config.AdmissionConfig.Measure measure) {
        return new Latency(measure.samples(), measure.window(), measure.quantile(), measure.prior());
    }

    public Latency(int samples, Duration window, double quantile, Duration prior) {
        if (samples < MIN_SAMPLES || quantile <= 0 || quantile > 1 || window.isNegative() || window.isZero() || prior.isNegative()) {
            throw new IllegalArgumentException("samples >= " + MIN_SAMPLES + ", 0 < quantile <= 1, a positive window");
        }
        this.nanos = new long[samples];
        this.at = new long[samples];
        this.windowNanos = window.toNanos();
        this.quantile = quantile;
        this.priorNanos = prior.toNanos();
        this.cached = priorNanos;
        this.cachedAt = System.nanoTime() - REFRESH.toNanos();
    }

    public synchronized void record(Duration took) {
        nanos[next] = Math.max(0, took.toNanos());
        at[next] = System.nanoTime();
        next = (next + 1) % nanos.length;
        size = Math.min(size + 1, nanos.length);
    }

    /** The quantile of the recent durations, or the prior while fewer than ten are recent. */
    public Duration percentile() {
        long now = System.nanoTime();
        synchronized (this) {
            if (now - cachedAt < REFRESH.toNanos()) {
                return Duration.ofNanos(cached);
            }
            long[] recent = new long[size];
            int n = 0;
            for (int i = 0; i < size; i++) {
                if (now - at[i] <= windowNanos) {
                    recent[n++] = nanos[i];
                }
            }
            long value = priorNanos;
            if (n >= MIN_SAMPLES) {
                Arrays.sort(recent, 0, n);
                value = recent[Math.min(n - 1, (int) Math.ceil(quantile * n) - 1)];
            }
            cachedAt = now;
            cached = value;
            return Duration.ofNanos(value);
        }
    }
}
