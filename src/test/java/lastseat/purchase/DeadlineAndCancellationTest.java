package lastseat.purchase;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.http.Fault;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.UUID;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The scope's promises (I5): the deadline or a failing check interrupts the sibling, whose HTTP call
 * stops (the answer comes long before the slow stub would have answered, and the scope waits for
 * every subtask before it answers), and the hold is released.
 */
class DeadlineAndCancellationTest {
    private static final int DEADLINE_MS = 800;
    private static final int SLACK_MS = 150;
    private static final int SLOW_MS = 2000;

    @RegisterExtension
    static final LastseatApp app = LastseatApp.shared();

    private String event;

    @BeforeEach
    void setUp() {
        event = app.newEvent("A1");
    }

    @AfterEach
    void seatIsBackAndResourcesCameBack() {
        app.stubs().verify(0, postRequestedFor(urlPathEqualTo("/payments")));
        Invariants.nothingHeld(app, event);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void slowChecksEndIn504WithinTheDeadlineAndBothCallsAreCancelled() {
        slow("/fraud/checks", "fraud-check-approve.json");
        slow("/tax/quotes", "tax-quote-ok.json");

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(504);
        assertThat(answer.json().path("type").asText()).isEqualTo("urn:lastseat:problem:deadline-passed");
        assertThat(answer.serverMillis()).as("answered within deadline + slack").isLessThan(DEADLINE_MS + SLACK_MS);
        assertThat(outcomes()).containsEntry("fraud", "cancelled").containsEntry("tax", "cancelled");
        assertThat(app.db().purchaseState(purchaseId())).isEqualTo("RELEASED");
    }

    @Test
    void aSlowFraudCheckAloneEndsIn504AndTheSeatComesBack() {
        slow("/fraud/checks", "fraud-check-approve.json");

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(504);
        assertThat(answer.serverMillis()).isLessThan(DEADLINE_MS + SLACK_MS);
        assertThat(outcomes()).containsEntry("fraud", "cancelled").containsEntry("tax", "ok");
    }

    @Test
    void aFailingTaxServiceCancelsTheSlowFraudCheckAtOnce() {
        slow("/fraud/checks", "fraud-check-approve.json");
        // The failure comes 100 ms in, so the fraud call is surely under way when it is cancelled.
        app.stubs().stubFor(post(urlPathEqualTo("/tax/quotes")).atPriority(1).willReturn(aResponse().withStatus(500).withFixedDelay(100)));

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(503);
        assertThat(answer.json().path("service").asText()).isEqualTo("tax");
        assertThat(answer.serverMillis()).as("the fraud call was stopped, not awaited").isLessThan(DEADLINE_MS);
        assertThat(outcomes()).containsEntry("fraud", "cancelled");
    }

    @Test
    void aResetFraudConnectionCancelsTheSlowTaxQuoteAtOnce() {
        slow("/tax/quotes", "tax-quote-ok.json");
        app.stubs().stubFor(post(urlPathEqualTo("/fraud/checks")).atPriority(1)
                                    .willReturn(aResponse().withFault(Fault.CONNECTION_RESET_BY_PEER).withFixedDelay(100)));

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(503);
        assertThat(answer.json().path("type").asText()).isEqualTo("urn:lastseat:problem:check-unavailable");
        assertThat(answer.json().path("service").asText()).isEqualTo("fraud");
        assertThat(answer.json().path("detail").asText()).as("a request sent and cut off, not a service out of reach")
                                                       .contains("the exchange failed before an answer");
        assertThat(answer.serverMillis()).isLessThan(DEADLINE_MS);
        assertThat(outcomes()).containsEntry("tax", "cancelled");
    }

    @Test
    void garbageFromTheTaxServiceIsACleanProblemAndNoPayment() {
        for (Fault fault : new Fault[] {Fault.MALFORMED_RESPONSE_CHUNK, Fault.RANDOM_DATA_THEN_CLOSE, Fault.EMPTY_RESPONSE}) {
            app.stubs().stubFor(post(urlPathEqualTo("/tax/quotes")).atPriority(1).willReturn(aResponse().withFault(fault)));

            Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

            assertThat(answer.status()).as(fault + ": " + answer).isEqualTo(503);
            assertThat(answer.header("Content-Type")).isEqualTo("application/problem+json");
            Invariants.nothingHeld(app, event);
        }
    }

    private void slow(String path, String bodyFile) {
        app.stubs().stubFor(post(urlPathEqualTo(path)).atPriority(1).willReturn(aResponse()
                .withStatus(200).withHeader("Content-Type", "application/json")
                .withBodyFile(bodyFile).withTransformers("response-template").withFixedDelay(SLOW_MS)));
    }

    private String purchaseId() {
        return app.db().strings("SELECT id FROM purchases WHERE event_id = ?", event).getFirst();
    }

    private java.util.Map<String, String> outcomes() {
        JsonNode timeline = app.client().purchaseView(purchaseId()).path("timeline");
        java.util.Map<String, String> outcomes = new java.util.HashMap<>();
        timeline.forEach(step -> outcomes.put(step.path("step").asText(), step.path("outcome").asText()));
        return outcomes;
    }
}
