package lastseat.idempotency;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.Together;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/** {@code Idempotency-Key} as the IETF draft says, over HTTP, with the database as the memory. */
class IdempotencyTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.shared();

    private String event;
    private String key;

    @BeforeEach
    void setUp() {
        event = app.newEvent("A1", "A2");
        key = UUID.randomUUID().toString();
    }

    @AfterEach
    void invariantsHoldAndResourcesCameBack() {
        Invariants.nothingHeld(app, event);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aRetryAfterCompletionGetsTheFirstAnswerByteForByteAndNoSecondCharge() {
        Answer first = app.client().purchaseSeats(key, event, "A1");

        Answer again = app.client().purchaseSeats(key, event, "A1");

        assertThat(first.status()).isEqualTo(201);
        assertThat(again.status()).isEqualTo(201);
        assertThat(again.raw()).isEqualTo(first.raw());
        assertThat(again.header("Location")).isEqualTo(first.header("Location"));
        assertThat(again.header("Idempotent-Replayed")).isEqualTo("true");
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")));
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).isEqualTo(1);
    }

    @Test
    void aRefusalIsReplayedTooWithoutTryingAgain() {
        app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
        Answer first = app.client().purchaseSeats(key, event, "A1");

        Answer again = app.client().purchaseSeats(key, event, "A1");

        assertThat(first.status()).isEqualTo(409);
        assertThat(again.status()).isEqualTo(409);
        assertThat(again.raw()).isEqualTo(first.raw());
        assertThat(again.header("Idempotent-Replayed")).as("answered from the stored key, not run again").isEqualTo("true");
    }

    @Test
    void theSameKeyWithAnotherBodyIs422AndChangesNothing() {
        app.client().purchaseSeats(key, event, "A1");

        Answer other = app.client().purchaseSeats(key, event, "A2");

        assertThat(other.status()).as(other.toString()).isEqualTo(422);
        assertThat(other.json().path("type").asText()).isEqualTo("urn:lastseat:problem:idempotency-key-reused");
        assertThat(app.client().event(event).path("available").asInt()).as("A2 untouched").isEqualTo(1);
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")));
    }

    @Test
    void theSameKeyWhileTheFirstIsInFlightIs409AndOnlyOnePurchaseRuns() {
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1)
                                    .willReturn(aResponse().withStatus(201).withFixedDelay(300).withTransformers("ledger")));

        List<Answer> answers = Together.run(10, i -> app.client().purchaseSeats(key, event, "A1"));

        Map<Integer, Long> byStatus = answers.stream().collect(Collectors.groupingBy(Answer::status, Collectors.counting()));
        assertThat(byStatus).as(byStatus.toString()).containsEntry(201, 1L).containsEntry(409, 9L);
        assertThat(answers.stream().filter(a -> a.status() == 409))
                .allSatisfy(a -> assertThat(a.json().path("type").asText()).isEqualTo("urn:lastseat:problem:idempotency-key-in-flight"));
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")));
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).isEqualTo(1);
    }

    @Test
    void aMissingKeyIs400AndChangesNothing() {
        Answer answer = app.client().post("/purchases", null, LastseatClient.seatsBody(event, "A1"));

        assertThat(answer.status()).isEqualTo(400);
        assertThat(answer.json().path("type").asText()).isEqualTo("urn:lastseat:problem:idempotency-key-missing");
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).isZero();
        assertThat(app.purchaseCalls()).isEmpty();
    }

    @Test
    void aRetryAfterAnAnswerThatInvitesOneRunsAgain() {
        app.stubs().stubFor(post(urlPathEqualTo("/tax/quotes")).atPriority(1).willReturn(aResponse().withStatus(500)));
        Answer first = app.client().purchaseSeats(key, event, "A1");
        app.resetStubs();

        Answer retry = app.client().purchaseSeats(key, event, "A1");

        assertThat(first.status()).isEqualTo(503);
        assertThat(retry.status()).as(retry.toString()).isEqualTo(201);
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")));
    }
}
