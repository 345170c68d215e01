package lastseat.purchase;

import lastseat.payment.PaymentGateway;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Ledger;
import lastseat.testkit.Together;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.getRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * PAYMENT_UNKNOWN is settled by the provider's answer for the purchase's key, never by guessing:
 * captured → CONFIRMED (or REFUNDED when the seats are gone); failed, declined or canceled →
 * RELEASED; "nothing for that key" → the same charge sent again with the same key, whose answer
 * decides; no answer → asked again later, and past give-up-after PAYMENT_UNRESOLVED for an operator,
 * seats still held. The reconciler runs only when a test asks (its interval is ten minutes here)
 * and the settle time is zero, so a purchase is due as soon as its payment went unknown.
 */
class ReconcileTest {
    private static final Duration BACKOFF = Duration.ofMillis(400);
    private static final Duration GIVE_UP_AFTER = Duration.ofMinutes(1);
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("reconcile.settle-time", "0ms",
                                                           "reconcile.interval", "10m",
                                                           "reconcile.backoff", BACKOFF.toMillis() + "ms",
                                                           "reconcile.give-up-after", GIVE_UP_AFTER.toSeconds() + "s",
                                                           "purchase.sweep-interval", "10m"));

    private String event;

    @BeforeEach
    void setUp() {
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
        Answer retry = app.client().purchaseSeats(key, event, "A1");

        assertThat(settled).isEqualTo(1);
        assertThat(app.db().purchaseState(id)).isEqualTo("CONFIRMED");
        assertThat(app.db().count("SELECT COUNT(*) FROM tickets WHERE purchase_id = ?", id)).isEqualTo(1);
        assertThat(app.db().strings("SELECT dedupe_key FROM outbox WHERE purchase_id = ?", id)).containsExactly(id + ":confirmation-email");
        app.stubs().verify(1, getRequestedFor(urlPathEqualTo("/payments")).withQueryParam("idempotencyKey",
                com.github.tomakehurst.wiremock.client.WireMock.equalTo(PaymentGateway.idempotencyKey(id))));
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")));
        assertThat(retry.status()).as("the client's retry is told the purchase is confirmed now: " + retry).isEqualTo(201);
        assertThat(retry.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(app.client().purchaseView(id).path("timeline").findValuesAsText("step")).contains("reconcile");
    }

    @Test
    void aRetryWithTheSameKeyWhileThePaymentIsUnknownGetsTheCurrentStateAndNoSecondPayment() throws Exception {
        String key = UUID.randomUUID().toString();
        String id = unknownPayment(key, true);

        Answer retry = app.client().purchaseSeats(key, event, "A1");

        assertThat(retry.status()).as(retry.toString()).isEqualTo(202);
        assertThat(retry.json().path("id").asText()).isEqualTo(id);
        assertThat(retry.json().path("state").asText()).isEqualTo("PAYMENT_UNKNOWN");
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")));
        app.services().purchaseWorkers().reconcileNow();
    }

    @Test
    void aPaymentTheProviderNeverRecordedIsSentAgainWithItsKeyAndConfirmedNotReleased() throws Exception {
        String id = unknownPayment(UUID.randomUUID().toString(), false);
        app.resetStubs();

        int settled = app.services().purchaseWorkers().reconcileNow();

        // "No payment with that key" is never believed on its own: the request may still arrive. The same
        // charge, sent again with the same key, settles it at the provider.
        assertThat(settled).isEqualTo(1);
        assertThat(app.db().purchaseState(id)).isEqualTo("CONFIRMED");
        assertThat(Ledger.captures()).hasSize(1);
        assertThat(app.stubs().findAll(postRequestedFor(urlPathEqualTo("/payments"))))
                .as("the charge was sent again, with the purchase's one key")
                .hasSize(1).allMatch(r -> r.getHeader("Idempotency-Key").equals(PaymentGateway.idempotencyKey(id)));
    }

    @Test
    void aCaptureTheProviderRecordsLateIsConfirmedBecauseTheChargeIsSentAgainNeverReleasedUnderIt() throws Exception {
        // The provider has the request but will process it 3 s after it arrived: until then it says it has nothing.
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1).willReturn(aResponse().withStatus(201)
                .withFixedDelay(1500).withTransformers("ledger").withTransformerParameter("processAfterMillis", 3000)));
        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
        String id = answer.json().path("id").asText();
        app.resetStubs();
        assertThat(Ledger.payments()).as("the provider has not processed it yet").noneMatch(p -> id.equals(p.purchaseId()));

        int settled = app.services().purchaseWorkers().reconcileNow();
        awaitLedger(id, Duration.ofSeconds(5));

        assertThat(answer.status()).as(answer.toString()).isEqualTo(202);
        assertThat(settled).isEqualTo(1);
        assertThat(app.db().purchaseState(id)).as("never released under a capture that was still coming").isEqualTo("CONFIRMED");
        assertThat(Ledger.captures()).as("the provider decided once, for the key").hasSize(1)
                .allMatch(p -> p.purchaseId().equals(id));
        assertThat(app.db().strings("SELECT payment_id FROM purchases WHERE id = ?", id))
                .containsExactly(Ledger.captures().getFirst().id());
    }

    @Test
    void aLookupThatFindsNothingAndAResendWithoutAnAnswerLeaveThePurchaseUnknownItsSeatHeld() throws Exception {
        String id = unknownPayment(UUID.randomUUID().toString(), false);
        app.resetStubs();
        app.stubs().stubFor(get(urlPathEqualTo("/payments")).atPriority(1).willReturn(aResponse().withStatus(404)));
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1).willReturn(aResponse().withStatus(503)));

        int settled = app.services().purchaseWorkers().reconcileNow();

        assertThat(settled).isZero();
        assertThat(app.db().purchaseState(id)).isEqualTo("PAYMENT_UNKNOWN");
        assertThat(app.client().event(event).path("held").asInt()).isEqualTo(1);
        app.resetStubs();
        makeDue(id);
        assertThat(app.services().purchaseWorkers().reconcileNow()).isEqualTo(1);
        assertThat(app.db().purchaseState(id)).isEqualTo("CONFIRMED");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"failed", "declined", "canceled"})
    void aLookupThatSaysThePaymentFailedReleasesThePurchaseAndItsSeatOnce(String status) throws Exception {
        String id = unknownPayment(UUID.randomUUID().toString(), false);
        app.stubs().stubFor(get(urlPathEqualTo("/payments")).atPriority(1).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withBody("{\"id\":\"pay_x\",\"status\":\"" + status + "\"}")));

        int settled = app.services().purchaseWorkers().reconcileNow();
        int again = app.services().purchaseWorkers().reconcileNow();

        assertThat(settled).isEqualTo(1);
        assertThat(again).isZero();
        assertThat(app.db().purchaseState(id)).isEqualTo("RELEASED");
        assertThat(app.client().event(event).path("available").asInt()).isEqualTo(1);
        assertThat(app.client().purchaseView(id).path("reason").asText()).contains(status);
    }

    @Test
    void aDeclineTheProviderRecordsLateIsFoundByTheLookupAndReleases() throws Exception {
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1).willReturn(aResponse().withStatus(201)
                .withFixedDelay(1500).withTransformers("ledger").withTransformerParameter("decide", "decline")
                .withTransformerParameter("processAfterMillis", 100)));
        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
        String id = answer.json().path("id").asText();
        awaitLedger(id, Duration.ofSeconds(5));

        int settled = app.services().purchaseWorkers().reconcileNow();

        assertThat(answer.status()).as(answer.toString()).isEqualTo(202);
        assertThat(settled).isEqualTo(1);
        assertThat(app.db().purchaseState(id)).isEqualTo("RELEASED");
        assertThat(Ledger.captures()).isEmpty();
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")));
    }

    @Test
    void aProviderUnreachablePastGiveUpAfterShowsThePurchaseToAnOperatorNeverReleasesItAndStillSettlesIt() throws Exception {
        String id = unknownPayment(UUID.randomUUID().toString(), true);
        app.stubs().stubFor(get(urlPathEqualTo("/payments")).atPriority(1).willReturn(aResponse().withStatus(503)));
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1).willReturn(aResponse().withStatus(503)));
        List<LogRecord> warnings = new CopyOnWriteArrayList<>();
        Handler handler = capture(warnings);
        try {
            app.services().purchaseWorkers().reconcileNow();
            assertThat(app.db().purchaseState(id)).as("younger than give-up-after: still unknown").isEqualTo("PAYMENT_UNKNOWN");
            // Its payment went unknown longer ago than give-up-after (a test clock in the row, not a sleep).
            app.services().db().inTransaction(c -> lastseat.db.Sql.update(c, "UPDATE purchases SET unknown_since = ? WHERE id = ?",
                    OffsetDateTime.now().minus(GIVE_UP_AFTER).minusSeconds(1), id));
            makeDue(id);
            app.services().purchaseWorkers().reconcileNow();
            makeDue(id);
            app.services().purchaseWorkers().reconcileNow();
        } finally {
            Logger.getLogger(Reconciler.class.getName()).removeHandler(handler);
        }

        assertThat(app.db().purchaseState(id)).isEqualTo("PAYMENT_UNRESOLVED");
        assertThat(app.client().event(event).path("held").asInt()).as("its seat stays held").isEqualTo(1);
        Answer listed = app.client().get("/purchases?state=PAYMENT_UNRESOLVED");
        assertThat(listed.json().path("count").asInt()).isEqualTo(1);
        assertThat(listed.json().path("items").get(0).path("id").asText()).isEqualTo(id);
        assertThat(listed.json().path("items").get(0).path("ageSeconds").asLong()).isGreaterThan(GIVE_UP_AFTER.toSeconds());
        assertThat(app.client().metrics()).containsPattern("lastseat_payments_unresolved\\{[^}]*} 1.0");
        assertThat(warnings).as("logged once, at the move").filteredOn(r -> r.getMessage().contains(id)).hasSize(1);

        app.resetStubs();
        makeDue(id);
        assertThat(app.services().purchaseWorkers().reconcileNow()).as("still asked, and settled once it answers").isEqualTo(1);
        assertThat(app.db().purchaseState(id)).isEqualTo("CONFIRMED");
        assertThat(Ledger.captures()).hasSize(1);
    }

    @Test
    void aProviderThatCannotAnswerLeavesThePurchaseUnknownAndItIsAskedAgainAfterABackoff() throws Exception {
        String id = unknownPayment(UUID.randomUUID().toString(), true);
        var unreachable = app.stubs().stubFor(get(urlPathEqualTo("/payments")).atPriority(1).willReturn(aResponse().withStatus(503)));
        Instant asked = Instant.now();

        int settled = app.services().purchaseWorkers().reconcileNow();

        assertThat(settled).isZero();
        assertThat(app.db().purchaseState(id)).isEqualTo("PAYMENT_UNKNOWN");
        assertThat(app.db().count("SELECT check_attempts FROM purchases WHERE id = ?", id)).isEqualTo(1);
        Instant next = nextCheck(id);
        assertThat(next).as("jittered backoff: between half of it and all of it")
                .isBetween(asked.plus(BACKOFF.dividedBy(2)), Instant.now().plus(BACKOFF));
        assertThat(app.client().metrics()).containsPattern("lastseat_payments_unknown\\{[^}]*} 1.0");
        assertThat(app.services().purchaseWorkers().reconcileNow()).as("not due again before its backoff").isZero();

        app.stubs().removeStub(unreachable);
        sleepUntil(next);
        assertThat(app.services().purchaseWorkers().reconcileNow()).isEqualTo(1);
        assertThat(app.db().purchaseState(id)).isEqualTo("CONFIRMED");
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
        app.stubs().verify(1, getRequestedFor(urlPathEqualTo("/payments")));
        assertThat(app.db().purchaseState(id)).isEqualTo("CONFIRMED");
        assertThat(app.db().count("SELECT COUNT(*) FROM tickets WHERE purchase_id = ?", id)).isEqualTo(1);
    }

    @Test
    void aCaptureWhoseSeatsAreNoLongerHeldIsRefundedOnceWithItsOwnKey() throws Exception {
        String id = unknownPayment(UUID.randomUUID().toString(), true);
        // Something outside the state machine took the seats (an operator's hand, a bug): the money must go back.
        app.services().db().inTransaction(c -> lastseat.db.Sql.update(c,
                "UPDATE seats SET state = 'AVAILABLE', purchase_id = NULL WHERE purchase_id = ?", id));

        int settled = app.services().purchaseWorkers().reconcileNow();
        int again = app.services().purchaseWorkers().reconcileNow();

        assertThat(settled).isEqualTo(1);
        assertThat(again).isZero();
        assertThat(app.db().purchaseState(id)).isEqualTo("REFUNDED");
        assertThat(app.db().strings("SELECT dedupe_key FROM outbox WHERE purchase_id = ? AND kind = 'refund'", id))
                .containsExactly(id + ":refund");
        assertThat(app.db().count("SELECT COUNT(*) FROM tickets WHERE purchase_id = ?", id)).isZero();
    }

    /** A purchase whose payment outcome is unknown: the provider answers after the deadline. */
    private String unknownPayment(String key, boolean providerRecordsIt) {
        var stub = aResponse().withStatus(201).withFixedDelay(1500);
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1)
                                    .willReturn(providerRecordsIt ? stub.withTransformers("ledger") : stub));
        Answer answer = app.client().purchaseSeats(key, event, "A1");
        assertThat(answer.status()).as(answer.toString()).isEqualTo(202);
        return answer.json().path("id").asText();
    }

    /** Its next question is due now (instead of waiting out a backoff). */
    private static void makeDue(String id) {
        app.services().db().inTransaction(c -> lastseat.db.Sql.update(c, "UPDATE purchases SET next_check_at = ? WHERE id = ?",
                                                               OffsetDateTime.now().minusSeconds(1), id));
    }

    /** Waits, bounded, until the provider's ledger has a payment (captured or failed) for the purchase. */
    private static void awaitLedger(String id, Duration bound) throws InterruptedException {
        long until = System.nanoTime() + bound.toNanos();
        while (Ledger.payments().stream().noneMatch(p -> id.equals(p.purchaseId()))) {
            if (System.nanoTime() > until) {
                throw new AssertionError("the provider never processed purchase " + id);
            }
            Thread.sleep(20);
        }
    }

    private static Handler capture(List<LogRecord> records) {
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
                    records.add(record);
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger.getLogger(Reconciler.class.getName()).addHandler(handler);
        return handler;
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
