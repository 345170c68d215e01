package lastseat.purchase;

import lastseat.stubs.InFlight;
import lastseat.support.Client;
import lastseat.support.Invariants;
import lastseat.support.TestApp;
import lastseat.support.Together;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The payment bulkhead under a crowd: 60 buyers at once, the provider taking 500 ms a call, a
 * deadline of 1.5 s so that 40 buyers are still waiting while the first 20 pay (on two cores the
 * crowd needs a few hundred milliseconds to get through its checks).
 *
 * <p>{@code payment.min-call-time} is 600 ms here: a buyer whose permit comes with less time left
 * gives it back instead of starting a call it would abandon at the deadline — an abandoned call
 * keeps running at the provider, so without this the provider could see more than 20 calls at once
 * even though this process never has more than 20 open.
 */
class BulkheadTest {
    private static final int DEADLINE_MS = 1500;
    private static TestApp app;

    @BeforeAll
    static void start() {
        app = TestApp.start(Map.of("purchase.deadline", DEADLINE_MS + "ms",
                                 "payment.max-wait", DEADLINE_MS + "ms",
                                 "payment.min-call-time", "600ms"));
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    @Test
    void theProviderNeverSeesMoreThanTwentyPaymentCallsAndEveryPermitComesBack() {
        String event = app.newEvent(60);
        app.stubs.stubFor(post(urlPathEqualTo("/payments")).atPriority(1)
                                  .willReturn(aResponse().withStatus(201).withFixedDelay(500).withTransformers("ledger")));

        List<Client.Answer> answers = Together.run(60, i -> app.client.purchase(UUID.randomUUID().toString(), event,
                                                                                 Integer.toString(i + 1)));

        Map<Integer, Long> byStatus = answers.stream().collect(Collectors.groupingBy(Client.Answer::status, Collectors.counting()));
        // A call given up at the deadline (answered 202) goes on at the provider after its permit is back.
        assertThat(InFlight.max()).as("most payment calls the provider saw at once: " + byStatus)
                .isBetween(1, 20 + byStatus.getOrDefault(202, 0L).intValue());
        assertThat(byStatus.keySet()).as(byStatus.toString()).isSubsetOf(201, 202, 503);
        assertThat(byStatus.getOrDefault(201, 0L) + byStatus.getOrDefault(202, 0L))
                .as("a full wave of payments was sent: " + byStatus).isGreaterThanOrEqualTo(20);
        assertThat(byStatus.getOrDefault(503, 0L)).as("more buyers wanted a permit than there are: " + byStatus).isPositive();
        answers.stream().filter(a -> a.status() == 503).forEach(a -> {
            assertThat(a.header("Retry-After")).isEqualTo("1");
            assertThat(a.json().path("type").asText()).as(a.body()).isEqualTo("urn:lastseat:problem:payment-capacity-full");
        });
        // Timed on the server, from the reservation to the last recorded step: the client opens 60
        // connections at once on the same two cores, so its clock also counts the wait to be accepted.
        for (String id : app.db.strings("SELECT id FROM purchases WHERE event_id = ?", event)) {
            var timeline = app.client.get("/purchases/" + id).json().path("timeline");
            java.time.Instant start = java.time.Instant.parse(timeline.get(0).path("startedAt").asText());
            java.time.Instant end = java.time.Instant.parse(timeline.get(timeline.size() - 1).path("endedAt").asText());
            assertThat(java.time.Duration.between(start, end).toMillis()).as("purchase %s, reserve to last step", id)
                    .isLessThan(DEADLINE_MS + 150);
        }
        long unknown = byStatus.getOrDefault(202, 0L);
        assertThat(app.client.event(event).path("held").asLong()).as("only unknown payments keep their hold").isEqualTo(unknown);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }
}
