package lastseat.purchase;

import lastseat.payment.PaymentGateway;
import lastseat.stubs.Ledger;
import lastseat.support.Client;
import lastseat.support.Invariants;
import lastseat.support.TestApp;
import lastseat.support.Together;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.getRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * PAYMENT_UNKNOWN is settled by asking the provider by the purchase's key, never by guessing:
 * captured → CONFIRMED (or REFUNDED when the seats are gone), no payment → RELEASED, no answer →
 * asked again later. The reconciler runs only when a test asks (its interval is ten minutes here)
 * and the settle time is zero, so a purchase is due as soon as its payment went unknown.
 */
class ReconcileTest {
    private static final Duration BACKOFF = Duration.ofMillis(400);
    private static TestApp app;
    private String event;

    @BeforeAll
    static void start() {
        app = TestApp.start(Map.of("reconcile.settle-time", "0ms",
                                   "reconcile.interval", "10m",
                                   "reconcile.backoff", BACKOFF.toMillis() + "ms",
                                   "purchase.sweep-interval", "10m"));
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    @BeforeEach
    void setUp() {
        app.resetStubs();
        event = app.newEvent("A1");
    }

    @AfterEach
    void invariantsHoldAndResourcesCameBack() {
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aTimedOutPaymentTheProviderCapturedIsConfirmedByAskingWithItsKey() throws Exception {
        String key = UUID.randomUUID().toString();
        String id = unknownPayment(key, true);

        int settled = app.services().purchaseWorkers().reconcileNow();
        Client.Answer retry = app.client.purchase(key, event, "A1");

        assertThat(settled).isEqualTo(1);
        assertThat(app.db.purchaseState(id)).isEqualTo("CONFIRMED");
        assertThat(app.db.count("SELECT COUNT(*) FROM tickets WHERE purchase_id = ?", id)).isEqualTo(1);
        assertThat(app.db.strings("SELECT dedupe_key FROM outbox WHERE purchase_id = ?", id)).containsExactly(id + ":confirmation-email");
        app.stubs.verify(1, getRequestedFor(urlPathEqualTo("/payments")).withQueryParam("idempotencyKey",
                com.github.tomakehurst.wiremock.client.WireMock.equalTo(PaymentGateway.idempotencyKey(id))));
        app.stubs.verify(1, postRequestedFor(urlPathEqualTo("/payments")));
        assertThat(retry.status()).as("the client's retry is told the purchase is confirmed now: " + retry).isEqualTo(201);
        assertThat(retry.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(app.client.get("/purchases/" + id).json().path("timeline").findValuesAsText("step")).contains("reconcile");
    }

    @Test
    void aRetryWithTheSameKeyWhileThePaymentIsUnknownGetsTheCurrentStateAndNoSecondPayment() throws Exception {
        String key = UUID.randomUUID().toString();
        String id = unknownPayment(key, true);

        Client.Answer retry = app.client.purchase(key, event, "A1");

        assertThat(retry.status()).as(retry.toString()).isEqualTo(202);
        assertThat(retry.json().path("id").asText()).isEqualTo(id);
        assertThat(retry.json().path("state").asText()).isEqualTo("PAYMENT_UNKNOWN");
        app.stubs.verify(1, postRequestedFor(urlPathEqualTo("/payments")));
        app.services().purchaseWorkers().reconcileNow();
    }

    @Test
    void aPaymentTheProviderNeverRecordedIsReleasedAndItsSeatComesBackOnce() throws Exception {
        String id = unknownPayment(UUID.randomUUID().toString(), false);

        int settled = app.services().purchaseWorkers().reconcileNow();

        assertThat(settled).isEqualTo(1);
        assertThat(app.db.purchaseState(id)).isEqualTo("RELEASED");
        assertThat(app.client.event(event).path("available").asInt()).isEqualTo(1);
        assertThat(Ledger.payments()).isEmpty();
    }

    @Test
    void aProviderThatCannotAnswerLeavesThePurchaseUnknownAndItIsAskedAgainAfterABackoff() throws Exception {
        String id = unknownPayment(UUID.randomUUID().toString(), true);
        var unreachable = app.stubs.stubFor(get(urlPathEqualTo("/payments")).atPriority(1).willReturn(aResponse().withStatus(503)));
        Instant asked = Instant.now();

        int settled = app.services().purchaseWorkers().reconcileNow();

        assertThat(settled).isZero();
        assertThat(app.db.purchaseState(id)).isEqualTo("PAYMENT_UNKNOWN");
        assertThat(app.db.count("SELECT check_attempts FROM purchases WHERE id = ?", id)).isEqualTo(1);
        Instant next = nextCheck(id);
        assertThat(next).as("jittered backoff: between half of it and all of it")
                .isBetween(asked.plus(BACKOFF.dividedBy(2)), Instant.now().plus(BACKOFF));
        assertThat(app.client.get("/observe/metrics").body()).containsPattern("lastseat_payments_unknown\\{[^}]*} 1.0");
        assertThat(app.services().purchaseWorkers().reconcileNow()).as("not due again before its backoff").isZero();

        app.stubs.removeStub(unreachable);
        sleepUntil(next);
        assertThat(app.services().purchaseWorkers().reconcileNow()).isEqualTo(1);
        assertThat(app.db.purchaseState(id)).isEqualTo("CONFIRMED");
    }

    @Test
    void twoReconcilersRacingAskAboutOnePurchaseOnceAndConfirmItOnce() throws Exception {
        String id = unknownPayment(UUID.randomUUID().toString(), true);

        List<Integer> settled = Together.run(2, i -> {
            try {
                return app.services().purchaseWorkers().reconcileNow();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        });

        assertThat(settled.stream().mapToInt(Integer::intValue).sum()).isEqualTo(1);
        app.stubs.verify(1, getRequestedFor(urlPathEqualTo("/payments")));
        assertThat(app.db.purchaseState(id)).isEqualTo("CONFIRMED");
        assertThat(app.db.count("SELECT COUNT(*) FROM tickets WHERE purchase_id = ?", id)).isEqualTo(1);
    }

    @Test
    void aCaptureWhoseSeatsAreNoLongerHeldIsRefundedOnceWithItsOwnKey() throws Exception {
        String id = unknownPayment(UUID.randomUUID().toString(), true);
        // Something outside the state machine took the seats (an operator's hand, a bug): the money must go back.
        app.services().db().read(c -> lastseat.db.Sql.update(c,
                "UPDATE seats SET state = 'AVAILABLE', purchase_id = NULL WHERE purchase_id = ?", id));

        int settled = app.services().purchaseWorkers().reconcileNow();
        int again = app.services().purchaseWorkers().reconcileNow();

        assertThat(settled).isEqualTo(1);
        assertThat(again).isZero();
        assertThat(app.db.purchaseState(id)).isEqualTo("REFUNDED");
        assertThat(app.db.strings("SELECT dedupe_key FROM outbox WHERE purchase_id = ? AND kind = 'refund'", id))
                .containsExactly(id + ":refund");
        assertThat(app.db.count("SELECT COUNT(*) FROM tickets WHERE purchase_id = ?", id)).isZero();
    }

    /** A purchase whose payment outcome is unknown: the provider answers after the deadline. */
    private String unknownPayment(String key, boolean providerRecordsIt) {
        var stub = aResponse().withStatus(201).withFixedDelay(1500);
        app.stubs.stubFor(post(urlPathEqualTo("/payments")).atPriority(1)
                                  .willReturn(providerRecordsIt ? stub.withTransformers("ledger") : stub));
        Client.Answer answer = app.client.purchase(key, event, "A1");
        assertThat(answer.status()).as(answer.toString()).isEqualTo(202);
        return answer.json().path("id").asText();
    }

    private static Instant nextCheck(String id) {
        return app.services().db().read(c -> lastseat.db.Sql.list(c, "SELECT next_check_at FROM purchases WHERE id = ?",
                rs -> rs.getObject(1, OffsetDateTime.class).toInstant(), id).getFirst());
    }

    private static void sleepUntil(Instant at) throws InterruptedException {
        Duration wait = Duration.between(Instant.now(), at);
        if (!wait.isNegative()) {
            Thread.sleep(wait.plusMillis(5));
        }
    }
}
