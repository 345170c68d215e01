package lastseat.purchase;

import io.helidon.metrics.api.Counter;
import io.helidon.metrics.api.MeterRegistry;
import io.helidon.metrics.api.Metrics;
import io.helidon.metrics.api.Tag;
import io.helidon.metrics.api.Timer;

import java.time.Duration;
import java.util.List;

/**
 * Purchases as the metrics show them: {@code lastseat.purchases{status, reason}} counts every answer to
 * {@code POST /purchases} by its status and its reason — {@code confirmed}, {@code pending}, or the
 * problem's kind ({@code sold-out}, {@code seats-taken}, {@code payment-capacity-full}, ...), so that
 * answers sharing a status can be told apart — and {@code lastseat.purchase} (seconds, by reason) times
 * each from its arrival to its answer on the server's clock.
 *
 * <p>Hazard: a tag's values must stay few; the reason is a kind from the code, never text from a request.
 */
public final class PurchaseMetrics {
    private final MeterRegistry registry = Metrics.globalRegistry();

    void outcome(PurchaseAnswers.Answer answer, Duration took) {
        String status = Integer.toString(answer.reply().status());
        String reason = answer.tag();
        registry.getOrCreate(Counter.builder("lastseat.purchases")
                                     .description("Purchases answered, by HTTP status and reason (confirmed, pending, or the problem's kind)")
                                     .tags(List.of(Tag.create("status", status), Tag.create("reason", reason))))
                .increment();
        registry.getOrCreate(Timer.builder("lastseat.purchase")
                                     .description("From a purchase's arrival to its answer, by reason")
                                     .tags(List.of(Tag.create("reason", reason))))
                .record(took);
    }
}
