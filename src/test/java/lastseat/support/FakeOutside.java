package lastseat.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import lastseat.config.LastseatConfig;
import lastseat.outside.Outside;
import lastseat.work.Deadline;

import java.io.IOException;
import java.math.BigDecimal;
import java.net.ConnectException;
import java.net.URLDecoder;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The fraud, tax, payment, refund and email services in memory, for the fast tier: the same paths and
 * answers as {@code wiremock/}, and a payment provider as truthful as the testkit's ledger — one
 * payment per idempotency key, a repeated request answered with what the key already did, a lookup
 * that tells it. Troubles are scripted per request, never random, so a test names the fault it
 * meets: a request lost before or after the provider acted, a broken connection, a 5xx.
 *
 * <p>Hazard: it answers on the caller's thread without a network, so it proves the flow's decisions,
 * not the HTTP client's timeouts; a {@link #hangChecks() hanging} check waits for the caller's
 * interrupt, which is how the real client's cancellation is seen here.
 */
public final class FakeOutside implements Outside {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What the provider did with one key. */
    public record Payment(String id, String idempotencyKey, String purchaseId, BigDecimal amount, String status) {
    }

    /** What the next payment request meets; requests after the scripted ones are answered plainly. */
    public enum Trouble {
        /** No connection: the provider never saw it. */
        REFUSE_CONNECTION,
        /** It timed out on the way: the provider never saw it. */
        LOSE_REQUEST,
        /** The provider acted, and the answer timed out on the way back. */
        LOSE_ANSWER,
        /** The provider acted, and the connection broke before the answer. */
        BREAK_AFTER_ACTING,
        /** The provider acted, then answered 500. */
        FAIL_AFTER_ACTING,
        /**
         * The client library fails as nothing expects, before the request leaves: an unchecked exception
         * whose message names classes and SQL ({@link #UNEXPECTED_MESSAGE}), which nobody may be shown.
         */
        FAIL_UNEXPECTEDLY
    }

    /** What {@link Trouble#FAIL_UNEXPECTEDLY} says: everything a buyer must never read. */
    public static final String UNEXPECTED_MESSAGE =
            "java.lang.IllegalStateException: org.h2.jdbc.JdbcSQLSyntaxErrorException: SQL SELECT * FROM purchases [42102-252]";

    private final String fraudPath;
    private final String taxPath;
    private final String paymentPath;
    private final String refundPath;
    private final String emailPath;
    private final Map<String, Payment> payments = new LinkedHashMap<>();
    private final Map<String, String> refunds = new LinkedHashMap<>();
    private final Deque<Trouble> troubles = new ArrayDeque<>();
    private final List<String> calls = new ArrayList<>();
    private final AtomicInteger sequence = new AtomicInteger();
    private final AtomicInteger interrupted = new AtomicInteger();
    private volatile String downService;
    private volatile Failing failing;
    private volatile boolean hangChecks;

    public FakeOutside(LastseatConfig config) {
        this.fraudPath = config.checks().fraudPath();
        this.taxPath = config.checks().taxPath();
        this.paymentPath = config.payment().path();
        this.refundPath = config.outbox().refundPath();
        this.emailPath = config.outbox().emailPath();
    }

    // --- scripting ---

    /** The next payment requests meet these troubles, one each, in order. */
    public synchronized void trouble(Trouble... next) {
        troubles.addAll(List.of(next));
    }

    /** {@code "fraud"} or {@code "tax"} answers 503 from now on. */
    public void down(String service) {
        downService = service;
    }

    /** {@code "fraud"} or {@code "tax"} fails from now on as the client library would: no connection, a timeout, a reset. */
    public void failing(String service, IOException failure) {
        failing = new Failing(service, failure);
    }

    private record Failing(String service, IOException failure) {
    }

    /** The fraud check waits until its caller is interrupted. */
    public void hangChecks() {
        hangChecks = true;
    }

    // --- what happened ---

    /** Every payment the provider captured, in order. */
    public synchronized List<Payment> captures() {
        return payments.values().stream().filter(p -> "captured".equals(p.status())).toList();
    }

    /** The payment ids refunded, once each. */
    public synchronized List<String> refunds() {
        return List.copyOf(refunds.values());
    }

    /** "METHOD path" of every request, in order. */
    public synchronized List<String> calls() {
        return List.copyOf(calls);
    }

    /** Calls that ended because their thread was interrupted (a cancelled subtask). */
    public int interruptedCalls() {
        return interrupted.get();
    }

    // --- Outside ---

    @Override
    public Answer post(String path, String json, Map<String, String> headers, Deadline deadline) throws IOException, InterruptedException {
        return post(path, json, headers);
    }

    @Override
    public Answer post(String path, String json, Map<String, String> headers, Duration timeout) throws IOException, InterruptedException {
        return post(path, json, headers);
    }

    @Override
    public synchronized Answer get(String pathAndQuery, Duration timeout) throws IOException {
        calls.add("GET " + pathAndQuery.split("\\?")[0]);
        String prefix = paymentPath + "?idempotencyKey=";
        if (!pathAndQuery.startsWith(prefix)) {
            return new Answer(404, "{}");
        }
        Payment payment = payments.get(URLDecoder.decode(pathAndQuery.substring(prefix.length()), StandardCharsets.UTF_8));
        return payment == null ? new Answer(404, "{\"error\":\"no payment with this key\"}") : new Answer(200, json(payment));
    }

    private Answer post(String path, String json, Map<String, String> headers) throws IOException, InterruptedException {
        synchronized (this) {
            calls.add("POST " + path);
        }
        JsonNode body = JSON.readTree(json);
        if (path.equals(fraudPath)) {
            return fraud(body);
        }
        if (path.equals(taxPath)) {
            return service("tax", new Answer(200, "{\"tax\":\"4.00\",\"currency\":\"" + body.path("currency").asText() + "\"}"));
        }
        if (path.equals(paymentPath)) {
            return pay(body, headers.get("Idempotency-Key"));
        }
        if (path.equals(refundPath)) {
            return refund(body, headers.get("Idempotency-Key"));
        }
        if (path.equals(emailPath)) {
            return new Answer(202, "{\"status\":\"accepted\"}");
        }
        return new Answer(404, "{}");
    }

    private Answer fraud(JsonNode body) throws IOException, InterruptedException {
        if (hangChecks) {
            try {
                new CountDownLatch(1).await();
            } catch (InterruptedException e) {
                interrupted.incrementAndGet();
                throw e;
            }
        }
        boolean decline = "fraudster".equals(body.path("buyer").path("id").asText());
        return service("fraud", new Answer(200, decline ? "{\"decision\":\"decline\",\"reason\":\"buyer is on the block list\"}"
                                                        : "{\"decision\":\"approve\",\"reason\":\"no risk signals\"}"));
    }

    private Answer service(String name, Answer answer) throws IOException {
        Failing now = failing;
        if (now != null && name.equals(now.service())) {
            throw now.failure();
        }
        return name.equals(downService) ? new Answer(503, "{\"error\":\"unavailable\"}") : answer;
    }

    private synchronized Answer pay(JsonNode body, String key) throws IOException {
        Trouble trouble = troubles.poll();
        if (trouble == Trouble.REFUSE_CONNECTION) {
            throw new ConnectException("connection refused");
        }
        if (trouble == Trouble.LOSE_REQUEST) {
            throw new HttpTimeoutException("request timed out");
        }
        if (trouble == Trouble.FAIL_UNEXPECTEDLY) {
            throw new IllegalStateException(UNEXPECTED_MESSAGE);
        }
        Payment payment = payments.computeIfAbsent(key, k -> new Payment(
                "pay_" + sequence.incrementAndGet(), k, body.path("purchaseId").asText(), new BigDecimal(body.path("amount").asText()),
                "tok_declined".equals(body.path("token").asText()) ? "declined" : "captured"));
        if (trouble != null) {
            switch (trouble) {
                case LOSE_ANSWER -> throw new HttpTimeoutException("request timed out");
                case BREAK_AFTER_ACTING -> throw new IOException("connection reset");
                case FAIL_AFTER_ACTING -> {
                    return new Answer(500, "{\"error\":\"internal\"}");
                }
                default -> throw new IllegalStateException(trouble.name());
            }
        }
        return "declined".equals(payment.status()) ? new Answer(402, "{\"status\":\"declined\",\"reason\":\"card_declined\"}")
                                                   : new Answer(201, json(payment));
    }

    private synchronized Answer refund(JsonNode body, String key) {
        String paymentId = body.path("paymentId").asText();
        boolean charged = payments.values().stream().anyMatch(p -> p.id().equals(paymentId) && "captured".equals(p.status()));
        if (!charged) {
            return new Answer(422, "{\"error\":\"no captured payment " + paymentId + "\"}");
        }
        refunds.putIfAbsent(key, paymentId);
        return new Answer(201, "{\"id\":\"ref_" + sequence.incrementAndGet() + "\",\"status\":\"succeeded\"}");
    }

    private static String json(Payment payment) {
        return "{\"id\":\"" + payment.id() + "\",\"status\":\"" + payment.status() + "\",\"amount\":\"" + payment.amount() + "\"}";
    }
}
