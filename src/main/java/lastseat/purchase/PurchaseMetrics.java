package lastseat.purchase;

import io.helidon.metrics.api.Counter;
import io.helidon.metrics.api.MeterRegistry;
import io.helidon.metrics.api.Metrics;
import io.helidon.metrics.api.Tag;

/** Counts purchases by the status they were answered with ({@code lastseat.purchases{status=...}}). */
public final class PurchaseMetrics {
    private final MeterRegistry registry = Metrics.globalRegistry();

    void outcome(int status) {
        registry.getOrCreate(Counter.builder("lastseat.purchases")
                                     .description("Purchases answered, by HTTP status")
                                     .tags(java.util.List.of(Tag.create("status", Integer.toString(status)))))
                .increment();
    }
}
