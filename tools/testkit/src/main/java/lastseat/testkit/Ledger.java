package lastseat.testkit;

import com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder;
import com.github.tomakehurst.wiremock.extension.Parameters;
import com.github.tomakehurst.wiremock.extension.ResponseDefinitionTransformerV2;
import com.github.tomakehurst.wiremock.http.QueryParameter;
import com.github.tomakehurst.wiremock.http.Request;
import com.github.tomakehurst.wiremock.http.ResponseDefinition;
import com.github.tomakehurst.wiremock.stubbing.ServeEvent;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The payment provider as a real one behaves: a ledger keyed by {@code Idempotency-Key}.
 *
 * <p>Contract. The first request with a key is decided once: captured (201) or declined, and a
 * decline is recorded too, as a payment with status {@code failed} (402). Every later request with
 * that key, through any stub with this transformer, gets the same payment and the same answer; a key
 * is never captured twice. A status lookup answers truthfully from what the provider has processed,
 * including a request whose answer was delayed past the caller's timeout or cut by a fault (the
 * transformer runs before WireMock applies the stub's delay or fault). Refunds and emails are
 * deduplicated by their keys the same way.
 *
 * <p>Stubs opt in with {@code "transformers": ["ledger"]} and steer the provider's decision with
 * {@code "transformerParameters"}:
 * <ul>
 *   <li>{@code "decide": "capture" | "decline"} (default capture), with {@code "reason"} for a decline
 *       (default {@code card_declined});</li>
 *   <li>{@code "processAfterMillis": N} (default 0): the provider processes the request N ms after it
 *       arrived. Until then the key is pending and a lookup answers 404, as if nothing had arrived;
 *       the same key sent again in that window makes the provider decide now, with the first
 *       request's decision;</li>
 *   <li>{@code "answerWith": 500} (default: the decision's own answer): the provider records its
 *       decision as usual, then answers with this status instead — a provider that charged and
 *       failed before it could say so.</li>
 * </ul>
 *
 * <p>The hazard this stub exists to expose: a lookup that says "none" does not prove that nothing
 * will be charged, and a missing answer does not prove a decline. Every change to a key is one
 * atomic step on its map entry, so concurrent requests, late processing and {@link #clear()} cannot
 * interleave into two decisions for one key.
 *
 * <p>WireMock creates each extension class separately, so the ledger is static;
 * {@code DELETE /__admin/ledger} empties it.
 */
public final class Ledger implements ResponseDefinitionTransformerV2 {
    public static final String CAPTURED = "captured";
    public static final String FAILED = "failed";
    public static final String REFUNDED = "refunded";

    /**
     * What the provider decided for one key; {@code reason} is set only when {@code failed};
     * {@code processedAt} (epoch millis) is when it decided, 0 while the key is still pending.
     */
    public record Payment(String id, String key, String purchaseId, String amount, String currency, String status, String reason,
                          long processedAt) {
        public boolean captured() {
            return CAPTURED.equals(status);
        }

        Payment processedNow() {
            return new Payment(id, key, purchaseId, amount, currency, status, reason, System.currentTimeMillis());
        }
    }

    /** A refund the provider made; {@code recordedAt} (epoch millis) is when. */
    public record Refund(String id, String key, String purchaseId, String paymentId, String amount, String currency, String status,
                         long recordedAt) {
    }

    public record Delivery(String key, String body, int times) {
    }

    /** A key's decision; {@code late} is the scheduled processing while the key is still pending, else null. */
    private record Entry(Payment payment, Future<?> late) {
        boolean pending() {
            return late != null;
        }

        Entry processed() {
            return new Entry(payment.processedNow(), null);
        }
    }

    /** What the stub tells the provider to decide, when, and what to answer (0: the decision's own answer). */
    private record Decision(String status, String reason, long afterMillis, int answerWith) {
    }

    private static final Map<String, Entry> PAYMENTS = new ConcurrentHashMap<>();
    private static final Map<String, Refund> REFUNDS = new ConcurrentHashMap<>();
    private static final Map<String, Delivery> EMAILS = new ConcurrentHashMap<>();
    private static final AtomicInteger SEQUENCE = new AtomicInteger();
    private static final Pattern FIELD = Pattern.compile("\"(amount|currency|paymentId|purchaseId)\"\\s*:\\s*\"([^\"]*)\"");
    private static final ScheduledThreadPoolExecutor LATE = lateProcessing();

    @Override
    public String getName() {
        return "ledger";
    }

    @Override
    public boolean applyGlobally() {
        return false;
    }

    @Override
    public ResponseDefinition transform(ServeEvent event) {
        Request request = event.getRequest();
        String path = request.getUrl().split("\\?")[0];
        String method = request.getMethod().getName();
        ResponseDefinition stub = event.getResponseDefinition();
        return switch (method + " " + path) {
            case "POST /payments" -> charge(stub, request);
            case "GET /payments" -> lookup(stub, request.queryParameter("idempotencyKey"));
            case "POST /refunds" -> refund(stub, request);
            case "POST /emails" -> email(stub, request);
            default -> answer(stub, 404, "{\"error\":\"the ledger does not serve " + method + " " + path + "\"}");
        };
    }

    /** Every payment the provider has processed, captured or failed; pending ones are not there yet. */
    public static List<Payment> payments() {
        return PAYMENTS.values().stream().filter(e -> !e.pending()).map(Entry::payment).toList();
    }

    /** The processed payments that took money: what every drill and invariant counts as a charge. */
    public static List<Payment> captures() {
        return payments().stream().filter(Payment::captured).toList();
    }

    public static List<Refund> refunds() {
        return List.copyOf(REFUNDS.values());
    }

    public static List<Delivery> emails() {
        return List.copyOf(EMAILS.values());
    }

    /** Empties the ledger; processing still scheduled for a removed key is cancelled and would find nothing. */
    public static void clear() {
        PAYMENTS.keySet().forEach(key -> PAYMENTS.computeIfPresent(key, (k, entry) -> {
            if (entry.pending()) {
                entry.late().cancel(false);
            }
            return null;
        }));
        REFUNDS.clear();
        EMAILS.clear();
    }

    private static ResponseDefinition charge(ResponseDefinition stub, Request request) {
        String key = request.getHeader("Idempotency-Key");
        if (key == null || key.isBlank()) {
            return answer(stub, 400, "{\"error\":\"Idempotency-Key is required\"}");
        }
        Decision decision;
        try {
            decision = decision(stub.getTransformerParameters());
        } catch (IllegalArgumentException e) {
            return answer(stub, 500, "{\"error\":" + quote("ledger stub misconfigured: " + e.getMessage()) + "}");
        }
        Map<String, String> fields = fields(request.getBodyAsString());
        // One atomic step per key: the first request decides, a resend while pending decides now with
        // that same decision, and anything later only reads what was decided.
        Entry entry = PAYMENTS.compute(key, (k, known) -> known == null ? arrive(k, fields, decision)
                                                        : known.pending() ? known.processed() : known);
        if (decision.answerWith() != 0) {
            return answer(stub, decision.answerWith(), "{\"error\":\"the provider failed after it processed the request\"}");
        }
        return charged(stub, entry.payment());
    }

    /**
     * The provider's decision for a key it has not seen. A late one is scheduled here, inside the
     * map's atomic step, so the entry and its processing exist together; the processing blocks on
     * this key until the step is over.
     */
    private static Entry arrive(String key, Map<String, String> fields, Decision decision) {
        Payment payment = new Payment("pay_" + SEQUENCE.incrementAndGet(), key, fields.get("purchaseId"),
                                      fields.get("amount"), fields.get("currency"), decision.status(), decision.reason(), 0);
        if (decision.afterMillis() == 0) {
            return new Entry(payment.processedNow(), null);
        }
        return new Entry(payment, LATE.schedule(() -> processLate(payment), decision.afterMillis(), TimeUnit.MILLISECONDS));
    }

    /** Only the entry this processing was scheduled for; one decided by a resend, or cleared and reused, stays. */
    private static void processLate(Payment payment) {
        PAYMENTS.computeIfPresent(payment.key(), (k, entry) ->
                entry.pending() && entry.payment().id().equals(payment.id()) ? entry.processed() : entry);
    }

    private static ResponseDefinition charged(ResponseDefinition stub, Payment payment) {
        return payment.captured()
                ? answer(stub, 201, json(payment))
                : answer(stub, 402, "{\"status\":\"failed\",\"reason\":" + quote(payment.reason()) + ",\"id\":" + quote(payment.id()) + "}");
    }

    private static ResponseDefinition lookup(ResponseDefinition stub, QueryParameter key) {
        Entry entry = key.isPresent() ? PAYMENTS.get(key.firstValue()) : null;
        return entry == null || entry.pending()
                ? answer(stub, 404, "{\"error\":\"no payment with that idempotency key\"}")
                : answer(stub, 200, json(entry.payment()));
    }

    private static ResponseDefinition refund(ResponseDefinition stub, Request request) {
        String key = request.getHeader("Idempotency-Key");
        if (key == null || key.isBlank()) {
            return answer(stub, 400, "{\"error\":\"Idempotency-Key is required\"}");
        }
        Map<String, String> fields = fields(request.getBodyAsString());
        Refund refund = REFUNDS.computeIfAbsent(key, k -> new Refund("ref_" + SEQUENCE.incrementAndGet(), k, fields.get("purchaseId"),
                fields.get("paymentId"), fields.get("amount"), fields.get("currency"), REFUNDED, System.currentTimeMillis()));
        return answer(stub, 201, json(refund));
    }

    private static ResponseDefinition email(ResponseDefinition stub, Request request) {
        String key = request.getHeader("Idempotency-Key");
        if (key == null || key.isBlank()) {
            return answer(stub, 400, "{\"error\":\"Idempotency-Key is required\"}");
        }
        EMAILS.merge(key, new Delivery(key, request.getBodyAsString(), 1),
                     (old, again) -> new Delivery(key, old.body(), old.times() + 1));
        return answer(stub, 202, "{\"status\":\"accepted\",\"key\":\"" + key + "\"}");
    }

    /** Keeps the stub's delay and fault: they are injected through WireMock, not here. */
    private static ResponseDefinition answer(ResponseDefinition stub, int status, String body) {
        return ResponseDefinitionBuilder.like(stub).but()
                .withBodyFile(null)
                .withStatus(status)
                .withHeader("Content-Type", "application/json")
                .withBody(body)
                .build();
    }

    private static Decision decision(Parameters parameters) {
        Map<String, Object> p = parameters == null ? Map.of() : parameters;
        String decide = String.valueOf(p.getOrDefault("decide", "capture"));
        String reason = String.valueOf(p.getOrDefault("reason", "card_declined"));
        long afterMillis = millis(p.getOrDefault("processAfterMillis", 0));
        long answerWith = millis(p.getOrDefault("answerWith", 0));
        if (answerWith != 0 && (answerWith < 100 || answerWith > 599)) {
            throw new IllegalArgumentException("answerWith is an HTTP status, not " + answerWith);
        }
        return switch (decide) {
            case "capture" -> new Decision(CAPTURED, null, afterMillis, (int) answerWith);
            case "decline" -> new Decision(FAILED, reason, afterMillis, (int) answerWith);
            default -> throw new IllegalArgumentException("decide is capture or decline, not " + decide);
        };
    }

    /** JSON mappings give an Integer, the Java API whatever number the test wrote, a hand-written stub perhaps a string. */
    private static long millis(Object value) {
        long millis;
        try {
            millis = value instanceof Number n ? n.longValue() : Long.parseLong(String.valueOf(value).trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("processAfterMillis is a number of milliseconds, not " + value);
        }
        if (millis < 0) {
            throw new IllegalArgumentException("processAfterMillis is not negative, not " + millis);
        }
        return millis;
    }

    /**
     * One daemon thread: late processing is a map update, and the queue holds at most one task per
     * pending key; a cancelled task leaves the queue at once rather than at its due time.
     */
    private static ScheduledThreadPoolExecutor lateProcessing() {
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, task -> {
            Thread thread = new Thread(task, "ledger-late-processing");
            thread.setDaemon(true);
            return thread;
        });
        executor.setRemoveOnCancelPolicy(true);
        return executor;
    }

    private static Map<String, String> fields(String body) {
        Map<String, String> fields = new ConcurrentHashMap<>();
        Matcher m = FIELD.matcher(body == null ? "" : body);
        while (m.find()) {
            fields.put(m.group(1), m.group(2));
        }
        return fields;
    }

    static String json(Payment p) {
        return "{\"id\":" + quote(p.id()) + ",\"idempotencyKey\":" + quote(p.key()) + ",\"purchaseId\":" + quote(p.purchaseId())
               + ",\"amount\":" + quote(p.amount()) + ",\"currency\":" + quote(p.currency()) + ",\"status\":" + quote(p.status())
               + (p.reason() == null ? "" : ",\"reason\":" + quote(p.reason())) + "}";
    }

    /** For the admin API: the payment with the moment the provider decided it, which its answers to lastseat do not carry. */
    static String adminJson(Payment p) {
        String json = json(p);
        return json.substring(0, json.length() - 1) + ",\"processedAt\":" + p.processedAt() + "}";
    }

    static String adminJson(Refund r) {
        String json = json(r);
        return json.substring(0, json.length() - 1) + ",\"recordedAt\":" + r.recordedAt() + "}";
    }

    static String json(Refund r) {
        return "{\"id\":" + quote(r.id()) + ",\"idempotencyKey\":" + quote(r.key()) + ",\"purchaseId\":" + quote(r.purchaseId())
               + ",\"paymentId\":" + quote(r.paymentId()) + ",\"amount\":" + quote(r.amount()) + ",\"currency\":" + quote(r.currency())
               + ",\"status\":" + quote(r.status()) + "}";
    }

    /** Keys come from request headers, so they are escaped; a field the request did not carry is JSON null. */
    private static String quote(String value) {
        return value == null ? "null" : "\"" + value.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
