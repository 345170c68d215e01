package lastseat.purchase;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A purchase that could not reach its payment in time is not admitted: 503 overloaded with
 * Retry-After, nothing reserved, no outside call, its key let go so a retry runs afresh.
 *
 * <p>One payment permit, and an 800 ms deadline of which a payment call needs 700 ms
 * (payment.min-call-time): with the 200 ms admission assumes for the way to the payment before it has
 * measured it, a purchase can finish only if nothing else runs. A purchase always goes while fewer
 * than the permits run (so the payments stay fed and measured), so the first is admitted (and stays
 * in its slow fraud check until its deadline); the second, arriving while it runs, is not.
 */
class OverloadTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("payment.min-call-time", "700ms", "payment.permits", "1"));

    @Test
    void aPurchaseThatCannotReachItsPaymentInTimeIsRefusedBeforeItTakesASeat() throws Exception {
        String event = app.newEvent("A1", "A2");
        app.stubs().stubFor(post(urlPathEqualTo("/fraud/checks")).atPriority(1)
                                    .willReturn(aResponse().withStatus(200).withFixedDelay(1500)
                                                        .withHeader("Content-Type", "application/json").withBodyFile("fraud-check-approve.json")));
        String key = UUID.randomUUID().toString();
        Answer answer;
        Answer retry;
        Answer first;
        try (ExecutorService buyers = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Answer> holder = buyers.submit(() -> app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1"));
            awaitFraudRequest();
            answer = app.client().purchaseSeats(key, event, "A2");
            retry = app.client().purchaseSeats(key, event, "A2");
            first = holder.get(10, TimeUnit.SECONDS);
        }

        assertThat(answer.status()).as(answer.toString()).isEqualTo(503);
        assertThat(answer.json().path("type").asText()).isEqualTo("urn:lastseat:problem:overloaded");
        assertThat(answer.header("Retry-After")).isEqualTo("1");
        assertThat(retry.status()).as(retry.toString()).isEqualTo(503);
        assertThat(retry.header("Idempotent-Replayed")).as("the key was let go: the retry ran again").isNull();
        assertThat(first.status()).as("the first purchase's fraud check outlived its deadline: " + first).isEqualTo(504);
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).as("only the first's").isEqualTo(1);
        assertThat(app.db().count("SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = ?", key)).as("key not stored").isZero();
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/fraud/checks")));
        app.stubs().verify(0, postRequestedFor(urlPathEqualTo("/payments")));
        assertThat(app.client().event(event).path("available").asInt()).as("both seats free again").isEqualTo(2);
        Invariants.nothingHeld(app, event);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    private static void awaitFraudRequest() throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (app.stubs().findAll(postRequestedFor(urlPathEqualTo("/fraud/checks"))).isEmpty()) {
            assertThat(System.nanoTime()).as("the first purchase's fraud check reached the stub within 5 s").isLessThan(until);
            Thread.sleep(2);
        }
    }
}
