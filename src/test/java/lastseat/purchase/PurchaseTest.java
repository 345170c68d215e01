package lastseat.purchase;

import com.fasterxml.jackson.databind.JsonNode;
import lastseat.payment.PaymentGateway;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.Ledger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.UUID;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/** One purchase over HTTP for each answer the API promises, with what each leaves behind. */
class PurchaseTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.shared();

    private String event;

    @BeforeEach
    void setUp() {
        event = app.newEvent("A1", "A2", "A3");
    }

    @AfterEach
    void invariantsHoldAndResourcesCameBack() {
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aBuyerGetsTheSeatTicketsAndOnePaymentCarryingThePurchaseKey() {
        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(201);
        JsonNode purchase = answer.json();
        assertThat(purchase.path("state").asText()).isEqualTo("CONFIRMED");
        assertThat(purchase.path("seats").toString()).isEqualTo("[\"A1\"]");
        assertThat(purchase.path("amount").asText()).isEqualTo("40.00");
        assertThat(purchase.path("tax").asText()).isEqualTo("4.00");
        assertThat(purchase.path("total").asText()).isEqualTo("44.00");
        assertThat(purchase.path("tickets")).hasSize(1);
        assertThat(answer.header("Location")).isEqualTo("/purchases/" + purchase.path("id").asText());
        String key = PaymentGateway.idempotencyKey(purchase.path("id").asText());
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")).withHeader("Idempotency-Key", equalTo(key)));
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")));
        JsonNode inventory = app.client().event(event);
        assertThat(inventory.path("sold").asInt()).isEqualTo(1);
        assertThat(inventory.path("held").asInt()).isZero();
        assertThat(app.db().count("SELECT COUNT(*) FROM outbox WHERE purchase_id = ? AND kind = 'confirmation-email'",
                                  purchase.path("id").asText())).as("confirmation email queued with the confirmation").isEqualTo(1);
    }

    @Test
    void theTimelineShowsEveryStepWithItsStartAndEnd() {
        String id = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1").json().path("id").asText();

        JsonNode purchase = app.client().purchaseView(id);

        assertThat(purchase.path("state").asText()).isEqualTo("CONFIRMED");
        assertThat(purchase.path("timeline").findValuesAsText("step"))
                .containsExactlyInAnyOrder("reserve", "fraud", "tax", "paying", "bulkhead", "payment", "confirm");
        purchase.path("timeline").forEach(step -> {
            assertThat(step.path("startedAt").asText()).isNotEmpty();
            assertThat(step.path("endedAt").asText()).isNotEmpty();
        });
    }

    @Test
    void aTakenSeatIsRefusedByNameBeforeAnyOutsideCall() {
        assertThat(app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1").status()).isEqualTo(201);
        app.stubs().resetRequests();

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A2", "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(409);
        assertThat(answer.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(answer.json().path("type").asText()).isEqualTo("urn:lastseat:problem:seats-taken");
        assertThat(answer.json().path("seats").toString()).isEqualTo("[\"A1\"]");
        assertThat(answer.json().path("detail").asText()).isEqualTo("A1 is already taken");
        assertThat(app.purchaseCalls()).as("no outside call for a refused reservation").isEmpty();
        assertThat(app.client().event(event).path("available").asInt()).as("A2 was not kept").isEqualTo(2);
    }

    @Test
    void aSoldOutQuantityIsRefusedBeforeAnyOutsideCall() {
        assertThat(app.client().post("/purchases", UUID.randomUUID().toString(), quantityBody(2)).status()).isEqualTo(201);
        app.stubs().resetRequests();

        Answer answer = app.client().post("/purchases", UUID.randomUUID().toString(), quantityBody(2));

        assertThat(answer.status()).as(answer.toString()).isEqualTo(409);
        assertThat(answer.json().path("type").asText()).isEqualTo("urn:lastseat:problem:sold-out");
        assertThat(answer.json().path("available").asInt()).isEqualTo(1);
        assertThat(app.purchaseCalls()).isEmpty();
        Invariants.nothingHeld(app, event);
    }

    @Test
    void aFraudDeclineIs403AndReleasesTheSeatWithoutAPaymentCall() {
        Answer answer = app.client().post("/purchases", UUID.randomUUID().toString(),
                                          LastseatClient.buyerBody(event, "fraudster", "tok_ok", "A1"));

        assertThat(answer.status()).as(answer.toString()).isEqualTo(403);
        assertThat(answer.json().path("type").asText()).isEqualTo("urn:lastseat:problem:fraud-declined");
        app.stubs().verify(0, postRequestedFor(urlPathEqualTo("/payments")));
        assertThat(app.client().event(event).path("available").asInt()).isEqualTo(3);
        assertThat(app.db().purchaseState(purchaseOf(event))).isEqualTo("RELEASED");
    }

    @Test
    void aDeclinedPaymentIs402AndReleasesTheSeatWithNothingCaptured() {
        Answer answer = app.client().post("/purchases", UUID.randomUUID().toString(),
                                          LastseatClient.buyerBody(event, "bob", "tok_declined", "A1"));

        assertThat(answer.status()).as(answer.toString()).isEqualTo(402);
        assertThat(answer.json().path("type").asText()).isEqualTo("urn:lastseat:problem:payment-declined");
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")));
        assertThat(Ledger.captures()).as("nothing captured").isEmpty();
        assertThat(app.client().event(event).path("available").asInt()).isEqualTo(3);
        assertThat(app.db().purchaseState(purchaseOf(event))).isEqualTo("RELEASED");
    }

    @Test
    void aDownTaxServiceIs503WithRetryAfterAndReleasesTheSeat() {
        app.stubs().stubFor(post(urlPathEqualTo("/tax/quotes")).atPriority(1).willReturn(aResponse().withStatus(500)));

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(503);
        assertThat(answer.header("Retry-After")).isEqualTo("1");
        assertThat(answer.json().path("type").asText()).isEqualTo("urn:lastseat:problem:check-unavailable");
        assertThat(answer.json().path("service").asText()).isEqualTo("tax");
        assertThat(answer.json().path("detail").asText()).contains("it answered 500");
        app.stubs().verify(0, postRequestedFor(urlPathEqualTo("/payments")));
        Invariants.nothingHeld(app, event);
    }

    @Test
    void aPaymentRequestTheProviderRefusesIs502AndReleasesTheSeat() {
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1).willReturn(aResponse().withStatus(422)));

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(502);
        assertThat(answer.json().path("type").asText()).isEqualTo("urn:lastseat:problem:payment-refused");
        assertThat(Ledger.payments()).isEmpty();
        Invariants.nothingHeld(app, event);
        assertThat(app.db().purchaseState(purchaseOf(event))).isEqualTo("RELEASED");
    }

    @Test
    void anUnknownPaymentOutcomeIs202AndKeepsTheHoldWithExactlyOneCall() {
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1)
                                    .willReturn(aResponse().withStatus(201).withFixedDelay(1500).withTransformers("ledger")));

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(202);
        assertThat(answer.json().path("state").asText()).isEqualTo("PAYMENT_UNKNOWN");
        assertThat(answer.elapsedMillis()).as("answered within the deadline + slack").isLessThan(800 + 150);
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")));
        JsonNode inventory = app.client().event(event);
        assertThat(inventory.path("held").asInt()).as("the hold stays while the payment is unknown").isEqualTo(1);
        assertThat(Ledger.captures()).as("the provider did capture: only reconciliation may decide").hasSize(1);
        assertThat(app.db().purchaseState(answer.json().path("id").asText())).isEqualTo("PAYMENT_UNKNOWN");
        settleNow(answer.json().path("id").asText());
    }

    @Test
    void aProviderThatKeepsFailingIsAskedAgainOnlyUpToTheLimitAndAlwaysWithTheOneKey() {
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1).willReturn(aResponse().withStatus(503)));

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(answer.status()).as("a 5xx does not prove that nothing was charged: " + answer).isEqualTo(202);
        String id = answer.json().path("id").asText();
        var calls = app.stubs().findAll(postRequestedFor(urlPathEqualTo("/payments")));
        assertThat(calls).as("payment.max-attempts").hasSize(app.services().payments().config().maxAttempts());
        assertThat(calls).allSatisfy(call -> assertThat(call.getHeader("Idempotency-Key"))
                .isEqualTo(PaymentGateway.idempotencyKey(id)));
        assertThat(app.client().purchaseView(id).path("timeline").findValuesAsText("step"))
                .as("each call is a step of the timeline").containsSubsequence("payment", "payment");
        assertThat(app.db().purchaseState(id)).isEqualTo("PAYMENT_UNKNOWN");
        settleNow(id);
    }

    @ParameterizedTest(name = "then {0}")
    @ValueSource(ints = {401, 404, 422})
    void aChargeCapturedBeforeAResetIsPendingWhenTheRetryIsRefusedNeverReleasedAsUncharged(int refusal) {
        // Two faults in a row: the provider captures and the connection resets; asked again with the same key, a
        // layer in front of it refuses. The refusal says nothing about what the first request did.
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1).inScenario("reset-then-refused")
                                    .whenScenarioStateIs(com.github.tomakehurst.wiremock.stubbing.Scenario.STARTED)
                                    .willSetStateTo("reset")
                                    .willReturn(aResponse().withFault(com.github.tomakehurst.wiremock.http.Fault.CONNECTION_RESET_BY_PEER)
                                                        .withTransformers("ledger")));
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1).inScenario("reset-then-refused")
                                    .whenScenarioStateIs("reset")
                                    .willReturn(aResponse().withStatus(refusal)));
        String key = UUID.randomUUID().toString();

        Answer answer = app.client().purchaseSeats(key, event, "A1");
        Answer retry = app.client().purchaseSeats(key, event, "A1");

        assertThat(answer.status()).as("captured, so never an error that says nothing was charged: " + answer).isEqualTo(202);
        String id = answer.json().path("id").asText();
        assertThat(app.stubs().findAll(postRequestedFor(urlPathEqualTo("/payments")))).hasSize(2);
        assertThat(Ledger.captures()).as("the provider holds the capture").hasSize(1);
        assertThat(app.db().purchaseState(id)).isEqualTo("PAYMENT_UNKNOWN");
        assertThat(app.client().event(event).path("held").asInt()).as("the seat stays held").isEqualTo(1);
        assertThat(retry.status()).as("the key's retry is told it is pending: " + retry).isEqualTo(202);
        settleNow(id);
        assertThat(app.db().purchaseState(id)).as("the reconciler finds the capture").isEqualTo("CONFIRMED");
    }

    @Test
    void aChargeThatFailedAfterTheCaptureThenARefusedRetryIsPendingNeverReleasedAsUncharged() {
        // A 5xx may come after the provider charged; the second attempt is refused at the door (422 here stands for
        // any refusal of the request itself): still unknown, never "nothing was charged".
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1).inScenario("5xx-then-refused")
                                    .whenScenarioStateIs(com.github.tomakehurst.wiremock.stubbing.Scenario.STARTED)
                                    .willSetStateTo("failed")
                                    .willReturn(aResponse().withStatus(500).withTransformers("ledger")
                                                        .withTransformerParameter("answerWith", 500)));
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1).inScenario("5xx-then-refused")
                                    .whenScenarioStateIs("failed")
                                    .willReturn(aResponse().withStatus(422)));

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(202);
        String id = answer.json().path("id").asText();
        assertThat(app.db().purchaseState(id)).isEqualTo("PAYMENT_UNKNOWN");
        settleNow(id);
        assertThat(app.db().purchaseState(id)).isEqualTo("CONFIRMED");
        assertThat(Ledger.captures()).hasSize(1);
    }

    @Test
    void aResetPaymentIsAskedAgainWithTheSameKeyAndConfirmedOnce() {
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1).inScenario("reset-then-ok")
                                    .whenScenarioStateIs(com.github.tomakehurst.wiremock.stubbing.Scenario.STARTED)
                                    .willSetStateTo("answered")
                                    .willReturn(aResponse().withFault(com.github.tomakehurst.wiremock.http.Fault.CONNECTION_RESET_BY_PEER)
                                                        .withTransformers("ledger")));
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1).inScenario("reset-then-ok")
                                    .whenScenarioStateIs("answered")
                                    .willReturn(aResponse().withStatus(201).withTransformers("ledger")));

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(201);
        String id = answer.json().path("id").asText();
        var calls = app.stubs().findAll(postRequestedFor(urlPathEqualTo("/payments")));
        assertThat(calls).hasSize(2).allSatisfy(call -> assertThat(call.getHeader("Idempotency-Key"))
                .isEqualTo(PaymentGateway.idempotencyKey(id)));
        assertThat(Ledger.captures()).as("the provider captured the reset call once, and answered the second with it").hasSize(1);
        assertThat(app.db().purchaseState(id)).isEqualTo("CONFIRMED");
    }

    @Test
    void aChargeWhoseConfirmationIsRefusedIsAnswered202AndNeverChargedAgain() throws Exception {
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1)
                                    .willReturn(aResponse().withStatus(201).withFixedDelay(400).withTransformers("ledger")));
        String key = UUID.randomUUID().toString();
        var meddler = java.util.concurrent.CompletableFuture.runAsync(() -> {
            // Somebody else moves the purchase while its payment is under way (as a sweeper or a cancel could).
            long giveUp = System.nanoTime() + java.time.Duration.ofSeconds(5).toNanos();
            while (app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ? AND state = 'PAYING'", event) == 0) {
                if (System.nanoTime() > giveUp) {
                    throw new AssertionError("the purchase never reached PAYING");
                }
                Thread.onSpinWait();
            }
            app.services().db().inTransaction(c -> lastseat.db.Sql.update(c,
                    "UPDATE purchases SET state = 'PAYMENT_UNKNOWN' WHERE event_id = ? AND state = 'PAYING'", event));
        });

        Answer answer = app.client().purchaseSeats(key, event, "A1");
        meddler.get();
        Answer retry = app.client().purchaseSeats(key, event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(202);
        assertThat(answer.json().path("state").asText()).isEqualTo("PAYMENT_UNKNOWN");
        assertThat(retry.status()).as("the retry is told where the purchase stands, not run again: " + retry).isEqualTo(202);
        assertThat(retry.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(retry.json().path("id").asText()).isEqualTo(answer.json().path("id").asText());
        assertThat(retry.json().path("state").asText()).isEqualTo("PAYMENT_UNKNOWN");
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")));
        assertThat(app.client().event(event).path("held").asInt()).as("the seat stays held for reconciliation").isEqualTo(1);
        settleNow(answer.json().path("id").asText());
    }

    /**
     * Settles an unknown payment now, with the stubs as the files have them, so that no background
     * question about it lands in a later test's traffic. Made due, it may be leased by the app's own
     * reconciler (every {@code reconcile.interval}) before this pass: this pass then skips it, and the
     * background question settles it within its lease, which is what the wait below allows for.
     */
    private void settleNow(String id) {
        app.resetStubs();
        app.services().db().inTransaction(c -> lastseat.db.Sql.update(c, "UPDATE purchases SET next_check_at = ? WHERE id = ? "
                                                               + "AND state = 'PAYMENT_UNKNOWN'",
                                                               java.time.OffsetDateTime.now().minusSeconds(1), id));
        try {
            app.services().purchaseWorkers().reconcileNow();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
        java.time.Instant giveUp = java.time.Instant.now().plusSeconds(10);
        while (app.db().purchaseState(id).equals("PAYMENT_UNKNOWN") && java.time.Instant.now().isBefore(giveUp)) {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
        }
        assertThat(app.db().purchaseState(id)).as("settled").isIn("CONFIRMED", "RELEASED", "REFUNDED");
    }

    private String quantityBody(int quantity) {
        return LastseatClient.quantityBody(event, quantity, "ada");
    }

    private String purchaseOf(String eventId) {
        return app.db().strings("SELECT id FROM purchases WHERE event_id = ?", eventId).getFirst();
    }
}
