package lastseat.payment;

import com.fasterxml.jackson.databind.JsonNode;
import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import io.github.resilience4j.bulkhead.BulkheadFullException;
import lastseat.config.PaymentConfig;
import lastseat.outside.Outside;
import lastseat.web.Json;
import lastseat.web.Text;
import lastseat.work.Backoff;
import lastseat.work.Deadline;
import lastseat.work.DeadlinePassed;
import lastseat.work.Latency;
import lastseat.work.Scoped;
import lastseat.work.Timeline;

import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
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
 * charges a key once, so asking again settles the question instead of leaving it open. The
 * reconciler settles what stays open by {@link #lookup} and, when the provider has nothing for the
 * key, by {@link #resend}ing the same charge with the same key.
 *
 * <p>Hazard: once a request may have left, a missing answer is {@link Charge.Unknown}, never a
 * failure — releasing the seats then could sell them while the buyer's money arrives. Only a
 * capture or a decline may end that; a later attempt's refused connection, timeout or 4xx says
 * nothing about what the earlier request did.
 */
public final class PaymentGateway {
    private static final java.util.logging.Logger LOG = java.util.logging.Logger.getLogger(PaymentGateway.class.getName());
    private final Outside http;
    private final PaymentConfig config;
    private final Bulkhead bulkhead;
    private final Latency callTime;
    /** When each open call started (unique, so two calls never share an entry). */
    private final ConcurrentSkipListSet<Long> openSince = new ConcurrentSkipListSet<>();
    private final AtomicLong lastStart = new AtomicLong(Long.MIN_VALUE);

    /** {@code callTime} learns how long a charge takes at the provider, whatever its ending. */
    public PaymentGateway(Outside http, PaymentConfig config, Latency callTime) {
        this.http = http;
        this.config = config;
        this.callTime = callTime;
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

    /**
     * How long a charge has lately kept its permit (a moving percentile, from the first request to the
     * settled answer; a call cut at the deadline counts the time it had): what admission plans with.
     */
    public Duration callTime() {
        Duration measured = callTime.percentile();
        // A call still open has taken at least its age: when the provider slows down all at once, the
        // calls not yet back say so before any is measured.
        Long oldest = openSince.ceiling(Long.MIN_VALUE);
        Duration open = oldest == null ? Duration.ZERO : Duration.ofNanos(System.nanoTime() - oldest);
        return open.compareTo(measured) > 0 ? open : measured;
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
                    long started = lastStart.updateAndGet(previous -> Math.max(previous + 1, System.nanoTime()));
                    openSince.add(started);
                    try {
                        return askUntilSettled(order, deadline, timeline);
                    } finally {
                        openSince.remove(started);
                        callTime.record(Duration.ofNanos(System.nanoTime() - started));
                    }
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
            LOG.log(java.util.logging.Level.WARNING, "payment of purchase " + order.purchaseId() + " failed unexpectedly", e);
            return sent.get() ? new Charge.Unknown("the payment failed unexpectedly after it may have been sent")
                    : new Charge.NotSent(Charge.NotSent.Why.UNREACHABLE, "the payment failed unexpectedly before it was sent");
        }
    }

    /** What the provider says about a purchase's payment when asked by its key. */
    public sealed interface Lookup {
        /** It captured a payment with this key. */
        record Captured(String paymentId) implements Lookup {
        }

        /** It processed the key and did not charge (failed, declined, canceled): a definite refusal. */
        record Refused(String status) implements Lookup {
        }

        /** It has no payment with this key — yet: a request may still be travelling, or be processed late. */
        record None() implements Lookup {
        }

        /** No clear answer (unreachable, timeout, 5xx, pending, garbage): ask again later. */
        record Unclear(String reason) implements Lookup {
        }
    }

    /** Statuses a provider gives a payment it processed and did not charge. */
    private static final java.util.Set<String> REFUSED = java.util.Set.of("failed", "declined", "canceled", "cancelled");

    /**
     * Asks the provider what it did with this purchase's key ({@code GET <path>?idempotencyKey=}),
     * waiting at most {@code timeout}. Outside the bulkhead: it charges nothing, and the reconciler
     * asks one at a time.
     */
    public Lookup lookup(String purchaseId, Duration timeout) throws InterruptedException {
        String key = idempotencyKey(purchaseId);
        Outside.Answer answer;
        try {
            answer = http.get(config.path() + "?idempotencyKey=" + URLEncoder.encode(key, StandardCharsets.UTF_8), timeout);
        } catch (IOException e) {
            String what = sentence(Outside.Failure.of(e));
            LOG.log(java.util.logging.Level.FINE, e, () -> "payment lookup of purchase " + purchaseId + ": " + what);
            return new Lookup.Unclear(what);
        }
        if (answer.status() == 404) {
            return new Lookup.None();
        }
        if (answer.status() != 200) {
            return new Lookup.Unclear("the provider answered " + answer.status());
        }
        String status = status(answer.body());
        if (REFUSED.contains(status)) {
            return new Lookup.Refused(status);
        }
        return switch (captured(answer.body())) {
            case Charge.Captured captured -> new Lookup.Captured(captured.paymentId());
            default -> new Lookup.Unclear("the provider's payment for the key is " + (status.isEmpty() ? "unreadable" : word(status)));
        };
    }

    /**
     * Sends the charge once more with the purchase's key, for a payment whose outcome is unknown
     * and that the provider says it does not have: a provider that got the earlier request answers
     * with what it did, one that did not decides now; with the key it never charges twice. After
     * this the key is settled at the provider, so a request of ours still travelling, or processed
     * late, cannot charge later. Only {@link Charge.Captured} and {@link Charge.Declined} are
     * answers; everything else leaves the question open. Takes a bulkhead permit like any charge.
     */
    public Charge resend(PaymentOrder order, Duration timeout) throws InterruptedException {
        if (!bulkhead.tryAcquirePermission()) {
            return new Charge.Unknown("no payment permit free to ask again");
        }
        try {
            Attempt attempt = post(order, http -> http.post(config.path(), body(order),
                    Map.of("Idempotency-Key", idempotencyKey(order.purchaseId())), timeout));
            return attempt.definite() ? attempt.charge() : new Charge.Unknown("asked again: " + describe(attempt.charge()));
        } finally {
            bulkhead.onComplete();
        }
    }

    /**
     * What one call told: the charge, whether the request may have reached the provider, and
     * whether asking again with the same key could settle it.
     */
    private record Attempt(Charge charge, boolean mayHaveReached, boolean askAgain) {
        /** A definite answer: the provider captured, or declined this key. */
        boolean definite() {
            return charge instanceof Charge.Captured || charge instanceof Charge.Declined;
        }
    }

    /**
     * Asks until an attempt settles it or the attempts or the time run out. Once any attempt may
     * have reached the provider, only a definite answer may replace "unknown": a later refused
     * connection, timeout or 4xx says nothing about what the earlier request did.
     */
    private Charge askUntilSettled(PaymentOrder order, Deadline deadline, Timeline timeline) throws Exception {
        Attempt attempt = timeline.step("payment", () -> post(order, deadline));
        boolean reached = attempt.mayHaveReached();
        Charge charge = attempt.charge();
        for (int calls = 1; calls < config.maxAttempts() && attempt.askAgain(); calls++) {
            Duration pause = Backoff.jittered(1, config.retryBackoff(), config.retryBackoff(), ThreadLocalRandom.current());
            if (deadline.remaining().compareTo(config.minCallTime().plus(pause)) < 0) {
                break;
            }
            Thread.sleep(pause);
            attempt = timeline.step("payment", () -> post(order, deadline));
            charge = reached && !attempt.definite()
                    ? new Charge.Unknown("an earlier request may have reached the provider; then " + describe(attempt.charge()))
                    : attempt.charge();
            reached |= attempt.mayHaveReached();
        }
        return charge;
    }

    private Attempt post(PaymentOrder order, Deadline deadline) throws InterruptedException {
        return post(order, http -> http.post(config.path(), body(order),
                                                 Map.of("Idempotency-Key", idempotencyKey(order.purchaseId())), deadline));
    }

    /** One request to the provider. */
    @FunctionalInterface
    private interface Call {
        Outside.Answer send(Outside http) throws IOException, InterruptedException;
    }

    private Attempt post(PaymentOrder order, Call call) throws InterruptedException {
        Outside.Answer answer;
        try {
            answer = call.send(http);
        } catch (IOException e) {
            Outside.Failure failure = Outside.Failure.of(e);
            String what = sentence(failure);
            LOG.log(java.util.logging.Level.FINE, e, () -> "payment of purchase " + order.purchaseId() + ": " + what);
            return switch (failure) {
                // No connection, so no request: this call charged nothing.
                case NO_CONNECTION_IN_TIME, CONNECTION_REFUSED -> new Attempt(new Charge.NotSent(Charge.NotSent.Why.UNREACHABLE, what), false, false);
                // The deadline is spent: there is no time to ask again.
                case NO_ANSWER_IN_TIME -> new Attempt(new Charge.Unknown(what), true, false);
                case BROKEN -> new Attempt(new Charge.Unknown(what), true, true);
            };
        }
        return switch (answer.status()) {
            case 200, 201 -> new Attempt(captured(answer.body()), true, false);
            case 402 -> new Attempt(new Charge.Declined(reason(answer.body())), true, false);
            // The provider refused this request before acting on it; what an earlier one did is another question.
            case 400, 401, 403, 404, 422 -> new Attempt(new Charge.Rejected(answer.status()), false, false);
            default -> new Attempt(new Charge.Unknown("the provider answered " + answer.status()), true, answer.status() >= 500);
        };
    }

    /** What a call that got no answer tells the buyer and the purchase's timeline; the log has the exception. */
    private static String sentence(Outside.Failure failure) {
        return switch (failure) {
            case NO_CONNECTION_IN_TIME, CONNECTION_REFUSED -> "could not connect to the provider";
            case NO_ANSWER_IN_TIME -> "no answer from the provider in time";
            case BROKEN -> "the connection broke before the provider answered";
        };
    }

    private static String body(PaymentOrder order) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("purchaseId", order.purchaseId());
        body.put("amount", order.total().toPlainString());
        body.put("currency", order.currency());
        body.put("token", order.paymentToken());
        return Json.text(body);
    }

    private static String describe(Charge charge) {
        return switch (charge) {
            case Charge.Captured captured -> "captured as " + captured.paymentId();
            case Charge.Declined declined -> "declined";
            case Charge.Rejected rejected -> "the provider answered " + rejected.status();
            case Charge.NotSent notSent -> notSent.reason();
            case Charge.Unknown unknown -> unknown.reason();
        };
    }

    private static Charge captured(String body) {
        try {
            JsonNode payment = Json.tree(body);
            String id = payment.path("id").asText("");
            if ("captured".equals(payment.path("status").asText()) && !id.isEmpty()) {
                return new Charge.Captured(id);
            }
            return new Charge.Unknown("the provider answered status " + word(payment.path("status").asText("")));
        } catch (IOException e) {
            LOG.log(java.util.logging.Level.FINE, "the payment provider's answer is not JSON", e);
            return new Charge.Unknown("the provider's answer is not JSON");
        }
    }

    /**
     * A status the provider gave, as a reason repeats it: a plain word ("pending"), else "(none)" or
     * "(unreadable)". Reasons are stored and shown to the buyer; the provider's other text is not ours to.
     */
    private static String word(String status) {
        return status.isEmpty() ? "(none)" : status.matches("[A-Za-z_-]{1,30}") ? status : "(unreadable)";
    }

    private static String status(String body) {
        try {
            return Json.tree(body).path("status").asText("").toLowerCase(java.util.Locale.ROOT);
        } catch (IOException e) {
            return "";
        }
    }

    private static String reason(String body) {
        try {
            return Text.cleaned(Json.tree(body).path("reason").asText(null), 100);
        } catch (IOException e) {
            return null;
        }
    }
}
