package lastseat.payment;

import com.fasterxml.jackson.databind.JsonNode;
import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import io.github.resilience4j.bulkhead.BulkheadFullException;
import lastseat.outside.OutsideHttp;
import lastseat.web.Json;
import lastseat.work.Deadline;
import lastseat.work.DeadlinePassed;
import lastseat.work.Scoped;
import lastseat.work.Timeline;

import java.io.IOException;
import java.net.ConnectException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Step 3: one charge through a semaphore bulkhead (Resilience4j; the only user of it).
 *
 * <p>Contract: at most {@code permits} calls to the provider at once from this process; a buyer
 * waits for a permit no longer than the remaining deadline (the scope interrupts the wait) nor
 * {@code maxWait}; every call carries the idempotency key derived from the purchase, so asking
 * again can never charge twice (I3); every permit is given back, whatever happens.
 *
 * <p>A reset connection or a 5xx answer is asked again, with the same key and the same permit, up
 * to {@code maxAttempts} calls and while {@code minCallTime} of the deadline is left: the provider
 * charges a key once, so asking again settles the question instead of leaving it open.
 *
 * <p>Hazard: once the request may have left, a missing answer is {@link Charge.Unknown}, never a
 * failure — releasing the seats then could sell them while the buyer's money arrives.
 */
public final class PaymentGateway {
    private final OutsideHttp http;
    private final PaymentConfig config;
    private final Bulkhead bulkhead;

    public PaymentGateway(OutsideHttp http, PaymentConfig config) {
        this.http = http;
        this.config = config;
        this.bulkhead = Bulkhead.of("payment", BulkheadConfig.custom()
                .maxConcurrentCalls(config.permits())
                .maxWaitDuration(config.maxWait())
                .fairCallHandlingStrategyEnabled(true)
                .writableStackTraceEnabled(false)
                .build());
    }

    /** The key every request about this purchase's payment carries. */
    public static String idempotencyKey(String purchaseId) {
        return "lastseat-payment-" + purchaseId;
    }

    public PaymentConfig config() {
        return config;
    }

    public int availablePermits() {
        return bulkhead.getMetrics().getAvailableConcurrentCalls();
    }

    public Charge charge(PaymentOrder order, Deadline deadline, Timeline timeline) throws InterruptedException {
        if (deadline.passed()) {
            return new Charge.NotSent(Charge.NotSent.Why.DEADLINE, "the deadline passed before the payment");
        }
        AtomicBoolean sent = new AtomicBoolean();
        try {
            return Scoped.within("payment-" + order.purchaseId(), deadline, () -> {
                int waiting = timeline.start("bulkhead");
                try {
                    bulkhead.acquirePermission();
                } catch (BulkheadFullException e) {
                    timeline.end(waiting, "full");
                    return new Charge.NotSent(Charge.NotSent.Why.CAPACITY, "no payment permit within " + config.maxWait().toMillis() + " ms");
                }
                timeline.end(waiting, "permit");
                try {
                    if (deadline.remaining().compareTo(config.minCallTime()) < 0) {
                        return new Charge.NotSent(Charge.NotSent.Why.CAPACITY, "too little time left to call the provider");
                    }
                    sent.set(true);
                    return askUntilSettled(order, deadline, timeline);
                } finally {
                    bulkhead.onComplete();
                }
            });
        } catch (DeadlinePassed e) {
            timeline.endOpen("cancelled");
            return sent.get()
                    ? new Charge.Unknown("no answer from the provider before the deadline")
                    : new Charge.NotSent(Charge.NotSent.Why.CAPACITY, "no payment permit before the deadline");
        } catch (RuntimeException e) {
            return sent.get() ? new Charge.Unknown(e.toString()) : new Charge.NotSent(Charge.NotSent.Why.UNREACHABLE, e.toString());
        }
    }

    /** What the provider says about a purchase's payment when asked by its key. */
    public sealed interface Lookup {
        /** It captured a payment with this key. */
        record Captured(String paymentId) implements Lookup {
        }

        /** It has no payment with this key. */
        record None() implements Lookup {
        }

        /** No clear answer (unreachable, timeout, 5xx, another status): ask again later. */
        record Unclear(String reason) implements Lookup {
        }
    }

    /**
     * Asks the provider what it did with this purchase's key ({@code GET <path>?idempotencyKey=}),
     * waiting at most {@code timeout}. Outside the bulkhead: the reconciler asks one at a time.
     */
    public Lookup lookup(String purchaseId, Duration timeout) throws InterruptedException {
        String key = idempotencyKey(purchaseId);
        OutsideHttp.Answer answer;
        try {
            answer = http.getJson(http.uri(config.path() + "?idempotencyKey=" + URLEncoder.encode(key, StandardCharsets.UTF_8)), timeout);
        } catch (IOException e) {
            return new Lookup.Unclear(e.getClass().getSimpleName() + " " + e.getMessage());
        }
        if (answer.status() == 404) {
            return new Lookup.None();
        }
        if (answer.status() != 200) {
            return new Lookup.Unclear("the provider answered " + answer.status());
        }
        return switch (captured(answer.body())) {
            case Charge.Captured captured -> new Lookup.Captured(captured.paymentId());
            default -> new Lookup.Unclear("the provider's answer does not say captured: " + answer.body());
        };
    }

    /** What one call told: the charge, and whether asking again with the same key could settle it. */
    private record Attempt(Charge charge, boolean askAgain) {
    }

    private Charge askUntilSettled(PaymentOrder order, Deadline deadline, Timeline timeline) throws Exception {
        Attempt attempt = timeline.step("payment", () -> post(order, deadline));
        for (int calls = 1; calls < config.maxAttempts() && attempt.askAgain(); calls++) {
            long backoffMillis = config.retryBackoff().toMillis();
            Duration pause = Duration.ofMillis(backoffMillis / 2 + ThreadLocalRandom.current().nextLong(backoffMillis / 2 + 1));
            if (deadline.remaining().compareTo(config.minCallTime().plus(pause)) < 0) {
                break;
            }
            Thread.sleep(pause);
            attempt = timeline.step("payment", () -> post(order, deadline));
        }
        return attempt.charge();
    }

    private Attempt post(PaymentOrder order, Deadline deadline) throws InterruptedException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("purchaseId", order.purchaseId());
        body.put("amount", order.total().toPlainString());
        body.put("currency", order.currency());
        body.put("token", order.paymentToken());
        OutsideHttp.Answer answer;
        try {
            answer = http.postJson(http.uri(config.path()), Json.text(body),
                                   Map.of("Idempotency-Key", idempotencyKey(order.purchaseId())), deadline);
        } catch (ConnectException | HttpConnectTimeoutException e) {
            return new Attempt(new Charge.NotSent(Charge.NotSent.Why.UNREACHABLE, "could not connect to the provider"), false);
        } catch (HttpTimeoutException e) {
            // The deadline is spent: there is no time to ask again.
            return new Attempt(new Charge.Unknown("no answer from the provider in time"), false);
        } catch (IOException e) {
            return new Attempt(new Charge.Unknown(e.getClass().getSimpleName() + " " + e.getMessage()), true);
        }
        return switch (answer.status()) {
            case 200, 201 -> new Attempt(captured(answer.body()), false);
            case 402 -> new Attempt(new Charge.Declined(reason(answer.body())), false);
            case 400, 401, 403, 404, 422 -> new Attempt(new Charge.Rejected(answer.status()), false);
            default -> new Attempt(new Charge.Unknown("the provider answered " + answer.status()), answer.status() >= 500);
        };
    }

    private static Charge captured(String body) {
        try {
            JsonNode payment = Json.tree(body);
            String id = payment.path("id").asText("");
            if ("captured".equals(payment.path("status").asText()) && !id.isEmpty()) {
                return new Charge.Captured(id);
            }
            return new Charge.Unknown("the provider answered status " + payment.path("status").asText("(none)"));
        } catch (IOException e) {
            return new Charge.Unknown("the provider's answer is not JSON");
        }
    }

    private static String reason(String body) {
        try {
            return Json.tree(body).path("reason").asText(null);
        } catch (IOException e) {
            return null;
        }
    }
}
