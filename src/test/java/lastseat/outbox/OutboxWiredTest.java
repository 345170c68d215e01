package lastseat.outbox;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Ledger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/** The worker Services starts: a confirmation email is sent by itself, a dead one shows on /outbox and in the metrics. */
class OutboxWiredTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("outbox.interval", "50ms", "outbox.backoff", "50ms",
                                                           "outbox.max-backoff", "100ms", "outbox.max-attempts", "2"));

    @Test
    void theAppsWorkerSendsTheEmailAndADeadRowShowsOnOutboxAndInTheMetrics() throws Exception {
        String sent = purchase();
        // The provider's ledger alone is not enough: on a busy machine the worker's call can time out after
        // the provider recorded it, and its retry would then meet the failing stub below.
        await(() -> Ledger.emails().stream().anyMatch(d -> d.key().equals(sent + ":confirmation-email"))
                    && app.client().outbox("sent").path("items").findValuesAsText("purchaseId").contains(sent),
              "email sent and marked sent");
        app.stubs().stubFor(post(urlPathEqualTo("/emails")).atPriority(1).willReturn(aResponse().withStatus(500)));
        String dead = purchase();
        await(() -> app.client().outbox("dead").path("count").asInt() == 1, "one dead row");

        Answer listing = app.client().get("/outbox?state=dead");
        Answer bad = app.client().get("/outbox?state=nope");
        String metrics = app.client().metrics();

        assertThat(listing.status()).isEqualTo(200);
        assertThat(listing.json().path("items").get(0).path("purchaseId").asText()).isEqualTo(dead);
        assertThat(listing.json().path("items").get(0).path("attempts").asInt()).isEqualTo(2);
        assertThat(bad.status()).isEqualTo(400);
        assertThat(bad.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(metrics).containsPattern("lastseat_outbox_dead\\{[^}]*} 1\\.0").containsPattern("lastseat_outbox_pending\\{[^}]*} 0\\.0");
        assertThat(app.client().outbox("sent").path("items").findValuesAsText("purchaseId")).contains(sent);
        Invariants.resourcesCameBack(app);
    }

    private static String purchase() {
        String event = app.newEvent("A1");
        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
        assertThat(answer.status()).as(answer.toString()).isEqualTo(201);
        return answer.json().path("id").asText();
    }

    private static void await(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > until) {
                throw new AssertionError("expected " + what);
            }
            Thread.sleep(20);
        }
    }
}
