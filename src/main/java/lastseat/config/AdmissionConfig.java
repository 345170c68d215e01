package lastseat.config;

import java.time.Duration;

/**
 * What admission plans with (docs/DESIGN.md, "Admission"): not a section, no key of its own, but the
 * values derived from {@code purchase.*} and {@code payment.*}, derived here once by
 * {@link LastseatConfig#admission()} so that admission ({@code purchase/Pace}) and the payment gateway
 * read the same figures and neither combines keys itself.
 *
 * @param deadline  {@code purchase.deadline − purchase.answer-reserve}: the time a purchase has from its arrival
 *                  to the end of its work (the reserve is kept for writing its outcome and answering)
 * @param margin    {@code payment.min-call-time}: what a purchase keeps in hand at the end of its deadline; a
 *                  purchase that could reach its payment only with less left would be given its permit back
 * @param permits   {@code payment.permits}: the narrow door admission plans around
 * @param toPayment how the time from admission to the payment's start is measured
 * @param callTime  how the time a charge keeps its permit is measured
 */
public record AdmissionConfig(Duration deadline, Duration margin, int permits, Measure toPayment, Measure callTime) {
    /**
     * The percentile admission plans with: nine purchases in ten are through in the time planned, and a
     * few slow calls do not make it plan for the slowest.
     */
    public static final double QUANTILE = 0.9;

    /**
     * A moving percentile of recent durations ({@code lastseat.work.Latency}).
     *
     * @param samples  {@code purchase.pace-samples}: the most recent durations kept
     * @param window   {@code purchase.pace-window}: how far back they go
     * @param quantile {@link #QUANTILE}
     * @param prior    what is assumed until ten recent durations are known, so a process started seconds
     *                 ago decides from a stated guess
     */
    public record Measure(int samples, Duration window, double quantile, Duration prior) {
    }
}
