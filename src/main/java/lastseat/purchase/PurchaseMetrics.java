package lastseat.purchase;

import io.helidon.metrics.api.Counter;
import io.helidon.metrics.api.MeterRegistry;
import io.helidon.metrics.api.Metrics;
import io.helidon.metrics.api.Tag;
import io.helidon.metrics.api.Timer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Purchases as the metrics show them: {@code lastseat.purchases{status, reason}} counts every answer to
 * {@code POST /purchases} by its status and its reason — {@code confirmed}, {@code pending}, or the
 * problem's kind ({@code sold-out}, {@code seats-taken}, {@code payment-capacity-full}, ...), so that
 * answers sharing a status can be told apart — and {@code lastseat.purchase} (seconds, by reason) times
 * each from its arrival to its answer on the server's clock.
 *
 * <p>Hazard: a tag's values must stay few; the reason is a kind from the code, never text from a request.
 * The meters are looked up once per (status, reason) and kept: the registry's own lookup builds a meter
 * id every time, which under an overload cost as much as a database read per answer.
 */
public final class PurchaseMetrics {
    private final MeterRegistry registry = Metrics.globalRegistry();
    private final Map<String, Meters> meters = new ConcurrentHashMap<>();

    private record Meters(Counter answers, Timer time) {
    }

    void outcome(PurchaseAnswers.Answer answer, Duration took) {
        int status = answer.reply().status();
        String reason = answer.tag();
        Meters kept = meters.computeIfAbsent(status + " " + reason, key -> new Meters(
                registry.getOrCreate(Counter.builder("lastseat.purchases")
                        .description("Purchases answered, by HTTP status and reason (confirmed, pending, or the problem's kind)")
                        .tags(List.of(Tag.create("status", Integer.toString(status)), Tag.create("reason", reason)))),
                registry.getOrCreate(Timer.builder("lastseat.purchase")
                        .description("From a purchase's arrival to its answer, by reason")
                        .tags(List.of(Tag.create("reason", reason))))));
        kept.answers().increment();
        kept.time().record(took);
    }
}
