package lastseat.stubs;

import com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder;
import com.github.tomakehurst.wiremock.extension.ResponseDefinitionTransformerV2;
import com.github.tomakehurst.wiremock.http.QueryParameter;
import com.github.tomakehurst.wiremock.http.Request;
import com.github.tomakehurst.wiremock.http.ResponseDefinition;
import com.github.tomakehurst.wiremock.stubbing.ServeEvent;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The payment provider as a real one behaves: a ledger keyed by {@code Idempotency-Key}. The same
 * key returns the same payment and never captures twice; a status lookup answers truthfully from
 * what arrived, including a request whose answer was delayed past the caller's timeout or cut by a
 * fault (the transformer runs before WireMock applies the stub's delay or fault). Refunds and
 * emails are deduplicated by their keys the same way.
 *
 * <p>Stubs opt in with {@code "transformers": ["ledger"]}. WireMock creates each extension class
 * separately, so the ledger is static; {@code DELETE /__admin/ledger} empties it.
 */
public final class Ledger implements ResponseDefinitionTransformerV2 {
    public record Payment(String id, String key, String purchaseId, String amount, String currency, String status) {
    }

    public record Delivery(String key, String body, int times) {
    }

    static final Map<String, Payment> PAYMENTS = new ConcurrentHashMap<>();
    static final Map<String, Payment> REFUNDS = new ConcurrentHashMap<>();
    static final Map<String, Delivery> EMAILS = new ConcurrentHashMap<>();
    private static final AtomicInteger SEQUENCE = new AtomicInteger();
    private static final Pattern FIELD = Pattern.compile("\"(amount|currency|paymentId|purchaseId)\"\\s*:\\s*\"([^\"]*)\"");

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

    public static List<Payment> payments() {
        return List.copyOf(PAYMENTS.values());
    }

    public static List<Payment> refunds() {
        return List.copyOf(REFUNDS.values());
    }

    public static List<Delivery> emails() {
        return List.copyOf(EMAILS.values());
    }

    public static void clear() {
        PAYMENTS.clear();
        REFUNDS.clear();
        EMAILS.clear();
    }

    private static ResponseDefinition charge(ResponseDefinition stub, Request request) {
        String key = request.getHeader("Idempotency-Key");
        if (key == null || key.isBlank()) {
            return answer(stub, 400, "{\"error\":\"Idempotency-Key is required\"}");
        }
        Map<String, String> fields = fields(request.getBodyAsString());
        Payment payment = PAYMENTS.computeIfAbsent(key, k -> new Payment("pay_" + SEQUENCE.incrementAndGet(), k,
                fields.get("purchaseId"), fields.get("amount"), fields.get("currency"), "captured"));
        return answer(stub, 201, json(payment));
    }

    private static ResponseDefinition lookup(ResponseDefinition stub, QueryParameter key) {
        Payment payment = key.isPresent() ? PAYMENTS.get(key.firstValue()) : null;
        return payment == null
                ? answer(stub, 404, "{\"error\":\"no payment with that idempotency key\"}")
                : answer(stub, 200, json(payment));
    }

    private static ResponseDefinition refund(ResponseDefinition stub, Request request) {
        String key = request.getHeader("Idempotency-Key");
        if (key == null || key.isBlank()) {
            return answer(stub, 400, "{\"error\":\"Idempotency-Key is required\"}");
        }
        Map<String, String> fields = fields(request.getBodyAsString());
        Payment refund = REFUNDS.computeIfAbsent(key, k -> new Payment("ref_" + SEQUENCE.incrementAndGet(), k,
                fields.get("purchaseId"), fields.get("amount"), fields.get("currency"), "refunded:" + fields.get("paymentId")));
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

    private static Map<String, String> fields(String body) {
        Map<String, String> fields = new ConcurrentHashMap<>();
        Matcher m = FIELD.matcher(body == null ? "" : body);
        while (m.find()) {
            fields.put(m.group(1), m.group(2));
        }
        return fields;
    }

    static String json(Payment p) {
        return "{\"id\":\"" + p.id() + "\",\"idempotencyKey\":\"" + p.key() + "\",\"purchaseId\":\"" + p.purchaseId()
               + "\",\"amount\":\"" + p.amount()
               + "\",\"currency\":\"" + p.currency() + "\",\"status\":\"" + p.status() + "\"}";
    }
}
