package lastseat.purchase;

import com.fasterxml.jackson.databind.JsonNode;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code purchase.answer-reserve}: a purchase's work ends that long before {@code purchase.deadline}, so the
 * last write and the answer fit in the deadline. With a reserve of 400 ms out of 800, a slow check or a slow
 * payment is cut once 400 ms have passed, and the answer comes before 800 ms. The deadline itself, not the
 * work's, handed to the flow answers no earlier than 800 ms (tried: fails).
 */
class AnswerReserveTest {
    private static final int DEADLINE_MS = 800;
    private static final int RESERVE_MS = 400;
    private static final int SLOW_MS = 2000;

    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("purchase.deadline", DEADLINE_MS + "ms",
                                                           "purchase.answer-reserve", RESERVE_MS + "ms",
                                                           "payment.max-wait", DEADLINE_MS + "ms"));

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
    void slowChecksAreCutWhenTheWorkEndsAndTheBuyerIsAnsweredBeforeTheDeadline() {
        app.stubs().stubFor(post(urlPathEqualTo("/fraud/checks")).atPriority(1).willReturn(aResponse()
                .withStatus(200).withHeader("Content-Type", "application/json")
                .withBodyFile("fraud-check-approve.json").withTransformers("response-template").withFixedDelay(SLOW_MS)));

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(504);
        assertThat(answer.serverMillis()).as("cut when the work ended, answered before the deadline")
                .isBetween((long) DEADLINE_MS - RESERVE_MS, (long) DEADLINE_MS - 1);
        assertThat(outcomes()).containsEntry("fraud", "cancelled");
        Invariants.nothingHeld(app, event);
    }

    @Test
    void aSlowPaymentIsCutWhenTheWorkEndsAndTheBuyerIsToldItIsPendingBeforeTheDeadline() {
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1)
                                    .willReturn(aResponse().withStatus(201).withFixedDelay(SLOW_MS).withTransformers("ledger")));

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        // The request may have reached the provider: pending, never "nothing was charged".
        assertThat(answer.status()).as(answer.toString()).isEqualTo(202);
        assertThat(answer.json().path("state").asText()).isEqualTo("PAYMENT_UNKNOWN");
        assertThat(answer.serverMillis()).as("cut when the work ended, answered before the deadline")
                .isBetween((long) DEADLINE_MS - RESERVE_MS, (long) DEADLINE_MS - 1);
        assertThat(outcomes()).containsEntry("payment", "cancelled");
    }

    private Map<String, String> outcomes() {
        String id = app.db().strings("SELECT id FROM purchases WHERE event_id = ?", event).getFirst();
        JsonNode timeline = app.client().purchaseView(id).path("timeline");
        Map<String, String> outcomes = new HashMap<>();
        timeline.forEach(step -> outcomes.put(step.path("step").asText(), step.path("outcome").asText()));
        return outcomes;
    }
}
