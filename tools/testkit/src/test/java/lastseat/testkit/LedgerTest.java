package lastseat.testkit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder;
import com.github.tomakehurst.wiremock.http.Fault;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The payment stub behaves like a real provider, or the reconciliation and crash drills prove
 * nothing: one decision per Idempotency-Key, recorded whether it is a capture or a decline, never
 * two captures, lookups that answer from what was processed (a late provider's key is "none" until
 * it is processed), and {@link Ledger#clear()} leaving nothing behind to surface later.
 *
 * <p>Everything goes over HTTP to a real WireMock with the file mappings, as the service reaches it.
 * A stub steered with transformer parameters is matched only by requests carrying its
 * {@code X-Stub} header, so a resend without the header goes through the ordinary capture mapping:
 * what the provider answers it must come from the ledger, not from the stub it matched.
 */
class LedgerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Long enough that the steps before it are over on two busy cores; the tests wait for it once. */
    private static final int LATE_MILLIS = 1_000;
    private static final Duration POLL_BOUND = Duration.ofSeconds(5);
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    private static WireMockServer stubs;

    @BeforeAll
    static void startStubs() {
        stubs = StubServer.create();
        stubs.start();
    }

    @AfterAll
    static void stopStubs() {
        stubs.stop();
    }

    @BeforeEach
    @AfterEach
    void emptyTheLedger() {
        stubs.resetToDefaultMappings();
        stubs.resetRequests();
        Ledger.clear();
    }

    @Test
    void aNewKeyIsCapturedAtArrivalAndALookupShowsTheCapture() {
        String key = newKey();

        Answer charged = pay(key, null);
        Answer looked = lookup(key);

        assertThat(charged.status()).isEqualTo(201);
        assertThat(charged.json().path("status").asText()).isEqualTo("captured");
        assertThat(looked.status()).isEqualTo(200);
        assertThat(looked.json().path("id").asText()).isEqualTo(charged.json().path("id").asText());
        assertThat(looked.json().path("purchaseId").asText()).isEqualTo("pur-" + key);
        assertThat(looked.json().path("amount").asText()).isEqualTo("44.00");
        assertThat(looked.json().has("reason")).as("a capture has no reason").isFalse();
        assertThat(Ledger.captures()).extracting(Ledger.Payment::key).containsExactly(key);
    }

    @Test
    void theSameKeyAgainIsTheSamePaymentAndNeverASecondCapture() {
        String key = newKey();

        Answer first = pay(key, null);
        Answer again = pay(key, null);

        assertThat(again.status()).isEqualTo(201);
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(Ledger.payments()).hasSize(1);
        assertThat(Ledger.captures()).hasSize(1);
    }

    @Test
    void aProviderThatFailsAfterItsCaptureAnswersTheStubsStatusButTheLookupShowsTheCapture() {
        String key = newKey();
        stub("crash-after", Map.of("answerWith", 500));

        Answer crashed = pay(key, "crash-after");
        Answer again = pay(key, null);

        assertThat(crashed.status()).isEqualTo(500);
        assertThat(lookup(key).status()).isEqualTo(200);
        assertThat(again.status()).as("the same key later: the capture it made").isEqualTo(201);
        assertThat(Ledger.captures()).hasSize(1);
    }

    @Test
    void aDeclineIsRecordedAndLookedUpAsFailedAndTheSameKeyIsNeverCapturedLater() {
        stub("decline", Map.of("decide", "decline", "reason", "insufficient_funds"));
        String key = newKey();

        Answer declined = pay(key, "decline");
        Answer resent = pay(key, null);
        Answer looked = lookup(key);

        assertThat(declined.status()).isEqualTo(402);
        assertThat(declined.json().path("status").asText()).isEqualTo("failed");
        assertThat(declined.json().path("reason").asText()).isEqualTo("insufficient_funds");
        String id = declined.json().path("id").asText();
        assertThat(id).isNotEmpty();
        assertThat(resent.status()).as("through the capture stub, the decided key stays declined").isEqualTo(402);
        assertThat(resent.body()).isEqualTo(declined.body());
        assertThat(looked.status()).isEqualTo(200);
        assertThat(looked.json().path("status").asText()).isEqualTo("failed");
        assertThat(looked.json().path("reason").asText()).isEqualTo("insufficient_funds");
        assertThat(looked.json().path("id").asText()).isEqualTo(id);
        assertThat(Ledger.payments()).extracting(Ledger.Payment::status).containsExactly("failed");
        assertThat(Ledger.captures()).isEmpty();
    }

    @Test
    void aDeclineWithoutAReasonSaysTheCardWasDeclined() {
        stub("decline", Map.of("decide", "decline"));

        Answer declined = pay(newKey(), "decline");

        assertThat(declined.status()).isEqualTo(402);
        assertThat(declined.json().path("reason").asText()).isEqualTo("card_declined");
    }

    @Test
    void aLateProviderRecordsTheCaptureOnlyAfterItsProcessingTime() {
        stub("late", Map.of("processAfterMillis", LATE_MILLIS));
        String key = newKey();
        long sent = System.nanoTime();

        Answer charged = pay(key, "late");
        Answer before = lookup(key);
        List<Ledger.Payment> recordedBefore = Ledger.payments();
        await(() -> lookup(key).status() == 200, "the late capture recorded");
        long seenAfterMillis = Duration.ofNanos(System.nanoTime() - sent).toMillis();
        Answer after = lookup(key);

        assertThat(charged.status()).as("the answer is what the provider will decide").isEqualTo(201);
        assertThat(before.status()).as("pending: as if nothing had arrived").isEqualTo(404);
        assertThat(recordedBefore).isEmpty();
        assertThat(seenAfterMillis).as("not processed before its time").isGreaterThanOrEqualTo(LATE_MILLIS);
        assertThat(after.json().path("status").asText()).isEqualTo("captured");
        assertThat(after.json().path("id").asText()).as("the id the POST promised").isEqualTo(charged.json().path("id").asText());
        assertThat(Ledger.captures()).hasSize(1);
    }

    @Test
    void aLateDeclineIsRecordedAsFailedWhenItIsProcessed() {
        stub("late-decline", Map.of("decide", "decline", "processAfterMillis", LATE_MILLIS));
        String key = newKey();

        Answer declined = pay(key, "late-decline");
        Answer before = lookup(key);
        await(() -> lookup(key).status() == 200, "the late decline recorded");

        assertThat(declined.status()).isEqualTo(402);
        assertThat(before.status()).isEqualTo(404);
        assertThat(lookup(key).json().path("status").asText()).isEqualTo("failed");
        assertThat(Ledger.captures()).isEmpty();
    }

    @Test
    void aResendWhilePendingDecidesNowWithTheFirstDecisionAndTheLateProcessingChangesNothing() {
        stub("late-decline", Map.of("decide", "decline", "reason", "do_not_honor", "processAfterMillis", LATE_MILLIS));
        String key = newKey();
        String witness = newKey();

        Answer first = pay(key, "late-decline");
        pay(witness, "late-decline");
        Answer pendingLookup = lookup(key);
        Answer resent = pay(key, null);
        Answer decidedNow = lookup(key);
        awaitLateProcessingUpTo(witness);
        Answer afterLate = lookup(key);

        assertThat(pendingLookup.status()).isEqualTo(404);
        assertThat(resent.status()).as("the first request's decision, not the capture stub's").isEqualTo(402);
        assertThat(resent.body()).isEqualTo(first.body());
        assertThat(decidedNow.status()).as("decided at the resend, before its late time").isEqualTo(200);
        assertThat(decidedNow.json().path("status").asText()).isEqualTo("failed");
        assertThat(decidedNow.json().path("reason").asText()).isEqualTo("do_not_honor");
        assertThat(afterLate.body()).as("the late processing found the key done").isEqualTo(decidedNow.body());
        assertThat(Ledger.payments()).filteredOn(p -> p.key().equals(key)).singleElement()
                .satisfies(p -> assertThat(p.id()).isEqualTo(first.json().path("id").asText()));
        assertThat(Ledger.captures()).isEmpty();
    }

    @Test
    void manyRequestsWithOneKeyArrivingTogetherCaptureOnce() {
        String key = newKey();

        List<Answer> answers = Together.run(24, i -> pay(key, null));

        assertThat(answers).extracting(Answer::status).containsOnly(201);
        assertThat(answers).extracting(a -> a.json().path("id").asText()).containsOnly(answers.getFirst().json().path("id").asText());
        assertThat(Ledger.payments()).hasSize(1);
        assertThat(Ledger.captures()).hasSize(1);
    }

    @Test
    void manyResendsOfAPendingKeyArrivingTogetherRecordItsOneDecisionOnce() {
        stub("late-decline", Map.of("decide", "decline", "processAfterMillis", 5_000));
        String key = newKey();
        Answer first = pay(key, "late-decline");

        List<Answer> resends = Together.run(24, i -> pay(key, null));

        assertThat(resends).extracting(Answer::body).containsOnly(first.body());
        assertThat(Ledger.payments()).extracting(Ledger.Payment::status).containsExactly("failed");
    }

    @Test
    void aRefundIsRecordedOncePerKeyAndNamesThePaymentItReturns() {
        String key = newKey();

        Answer first = refund(key, "pay_7");
        Answer again = refund(key, "pay_7");
        Answer other = refund(newKey(), "pay_8");

        assertThat(first.status()).isEqualTo(201);
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(first.json().path("status").asText()).isEqualTo("refunded");
        assertThat(first.json().path("paymentId").asText()).isEqualTo("pay_7");
        assertThat(other.json().path("id").asText()).isNotEqualTo(first.json().path("id").asText());
        assertThat(Ledger.refunds()).hasSize(2).filteredOn(r -> r.key().equals(key)).singleElement()
                .satisfies(r -> {
                    assertThat(r.paymentId()).isEqualTo("pay_7");
                    assertThat(r.status()).isEqualTo("refunded");
                });
    }

    @Test
    void theAdminLedgerShowsEveryPaymentWithItsStatusAndTheCapturesApart() {
        stub("decline", Map.of("decide", "decline"));
        String captured = newKey();
        String declined = newKey();
        pay(captured, null);
        pay(declined, "decline");
        refund(newKey(), "pay_1");

        JsonNode ledger = get("/__admin/ledger").json();

        assertThat(ledger.path("payments").findValuesAsText("status")).containsExactlyInAnyOrder("captured", "failed");
        assertThat(ledger.path("captures").findValuesAsText("idempotencyKey")).containsExactly(captured);
        assertThat(ledger.path("refunds").get(0).path("paymentId").asText()).isEqualTo("pay_1");
        assertThat(ledger.path("refunds").get(0).path("status").asText()).isEqualTo("refunded");
        assertThat(ledger.has("emails") && ledger.has("paymentsInFlight") && ledger.has("maxPaymentsInFlight")).isTrue();
    }

    @Test
    void clearCancelsLateProcessingSoNothingAppearsAfterwards() {
        stub("late", Map.of("processAfterMillis", LATE_MILLIS));
        stub("later", Map.of("processAfterMillis", 10_000));
        String key = newKey();
        pay(key, "late");

        Ledger.clear();
        pay(key, "later");
        String witness = newKey();
        pay(witness, "late");
        awaitLateProcessingUpTo(witness);

        assertThat(lookup(key).status()).as("neither the cleared request nor its reuse is processed yet").isEqualTo(404);
        assertThat(Ledger.payments()).extracting(Ledger.Payment::key).containsExactly(witness);
    }

    @Test
    void aRequestWhoseConnectionIsResetWasStillCaptured() {
        stubs.stubFor(post(urlPathEqualTo("/payments")).atPriority(1).withHeader("X-Stub", equalTo("reset"))
                              .willReturn(aResponse().withFault(Fault.CONNECTION_RESET_BY_PEER).withTransformers("ledger")));
        String key = newKey();

        assertThatThrownBy(() -> send(payment(key, "reset"))).isInstanceOf(UncheckedIOException.class);

        assertThat(lookup(key).json().path("status").asText()).isEqualTo("captured");
    }

    @Test
    void aRequestThatTimedOutOnOurSideWasStillCaptured() {
        stubs.stubFor(post(urlPathEqualTo("/payments")).atPriority(1).withHeader("X-Stub", equalTo("slow"))
                              .willReturn(aResponse().withStatus(201).withFixedDelay(2_000).withTransformers("ledger")));
        String key = newKey();
        HttpRequest impatient = HttpRequest.newBuilder(payment(key, "slow"), (n, v) -> true).timeout(Duration.ofMillis(300)).build();

        assertThatThrownBy(() -> send(impatient)).hasCauseInstanceOf(HttpTimeoutException.class);

        assertThat(lookup(key).json().path("status").asText()).isEqualTo("captured");
    }

    /** Once the witness, sent after the others with the same or a later time, is processed, theirs is due and past. */
    private static void awaitLateProcessingUpTo(String witness) {
        await(() -> lookup(witness).status() == 200, "the witness processed");
    }

    private static void stub(String name, Map<String, Object> parameters) {
        stubs.stubFor(post(urlPathEqualTo("/payments")).atPriority(1).withHeader("X-Stub", equalTo(name))
                              .willReturn(ResponseDefinitionBuilder.responseDefinition().withStatus(201)
                                                  .withTransformers("ledger").withTransformerParameters(parameters)));
    }

    private static String newKey() {
        return UUID.randomUUID().toString();
    }

    private static Answer pay(String key, String stub) {
        return send(payment(key, stub));
    }

    private static HttpRequest payment(String key, String stub) {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri("/payments"))
                .header("Idempotency-Key", key)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(
                        "{\"purchaseId\":\"pur-" + key + "\",\"amount\":\"44.00\",\"currency\":\"EUR\",\"token\":\"tok_ok\"}"));
        if (stub != null) {
            request.header("X-Stub", stub);
        }
        return request.build();
    }

    private static Answer refund(String key, String paymentId) {
        return send(HttpRequest.newBuilder(uri("/refunds"))
                            .header("Idempotency-Key", key)
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString("{\"purchaseId\":\"pur-" + key + "\",\"paymentId\":\"" + paymentId
                                                                      + "\",\"amount\":\"44.00\",\"currency\":\"EUR\"}"))
                            .build());
    }

    private static Answer lookup(String key) {
        return get("/payments?idempotencyKey=" + URLEncoder.encode(key, StandardCharsets.UTF_8));
    }

    private static Answer get(String path) {
        return send(HttpRequest.newBuilder(uri(path)).GET().build());
    }

    private static URI uri(String path) {
        return URI.create("http://127.0.0.1:" + stubs.port() + path);
    }

    private static Answer send(HttpRequest request) {
        try {
            HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
            return new Answer(response.statusCode(), response.body());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while calling the stub", e);
        }
    }

    /** A bounded poll: late processing is due in milliseconds, so seconds without it are a failure, not slowness. */
    private static void await(BooleanSupplier condition, String what) {
        long until = System.nanoTime() + POLL_BOUND.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > until) {
                throw new AssertionError("expected " + what + " within " + POLL_BOUND);
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for " + what, e);
            }
        }
    }

    private record Answer(int status, String body) {
        JsonNode json() {
            try {
                return JSON.readTree(body);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
