package lastseat.purchase;

import lastseat.db.Sql;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A failure after the reservation that cannot end the purchase — the database will not write its
 * next state — must not let the buyer's Idempotency-Key go while the hold remains: the buyer's retry
 * would meet its own hold and be told, for good, that its seat is taken. The failure is made real: a
 * transaction of the test's own holds the purchase's row while the flow tries to move it, until the
 * flow has answered (the lock timeout is 200 ms here).
 */
class KeyAfterFailureTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("db.lock-timeout", "200ms", "purchase.deadline", "3s",
                                                           "purchase.sweep-interval", "10m", "reconcile.interval", "10m"));

    private String event;
    private String key;

    @BeforeEach
    void setUp() {
        event = app.newEvent("A1");
        key = UUID.randomUUID().toString();
        // Time to lock the purchase's row while its checks run.
        app.stubs().stubFor(post(urlPathEqualTo("/fraud/checks")).atPriority(1).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withBody("{\"decision\":\"approve\"}").withFixedDelay(600)));
    }

    @AfterEach
    void invariantsHoldAndResourcesCameBack() {
        Invariants.hold(app, event);
        Invariants.nothingHeld(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aPaymentThatCannotStartBecauseTheDatabaseIsBusyKeepsTheKeyUntilItsHoldIsGone() throws Exception {
        Answer answer = whileItsRowIsLocked();
        Answer retry = app.client().purchaseSeats(key, event, "A1");

        assertThat(answer.status()).as("its hold could not be released either: pending, not an error " + answer).isEqualTo(202);
        assertThat(retry.status()).as("the retry meets no hold of its own: " + retry).isEqualTo(202);
        app.stubs().verify(0, postRequestedFor(urlPathEqualTo("/payments")));

        String id = answer.json().path("id").asText();
        recover(id);
        Answer settled = app.client().purchaseSeats(key, event, "A1");
        assertThat(settled.status()).as(settled.toString()).isEqualTo(200);
        assertThat(settled.json().path("state").asText()).as("released by recovery; nothing charged").isEqualTo("RELEASED");
    }

    @Test
    void aFailedCheckWhoseReleaseCannotBeWrittenKeepsTheKeyUntilItsHoldIsGone() throws Exception {
        // The failure comes after a while, not at once: the test must see the hold before the flow releases it.
        app.stubs().stubFor(post(urlPathEqualTo("/tax/quotes")).atPriority(1).willReturn(aResponse().withStatus(500).withFixedDelay(300)));

        Answer answer = whileItsRowIsLocked();
        Answer retry = app.client().purchaseSeats(key, event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(202);
        assertThat(retry.status()).as("never 409 seats-taken for the buyer's own hold: " + retry).isEqualTo(202);
        recover(answer.json().path("id").asText());
        assertThat(app.client().purchaseSeats(key, event, "A1").json().path("state").asText()).isEqualTo("RELEASED");
    }

    /** The buyer's purchase, answered while a transaction of the test holds its row. */
    private Answer whileItsRowIsLocked() throws Exception {
        CompletableFuture<Answer> answer = CompletableFuture.supplyAsync(() -> app.client().purchaseSeats(key, event, "A1"));
        String id = awaitHeld();
        return app.services().db().inTransaction(c -> {
            Sql.list(c, "SELECT state FROM purchases WHERE id = ? FOR UPDATE", rs -> rs.getString(1), id);
            try {
                return answer.get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new AssertionError("no answer while the row was locked", e);
            }
        });
    }

    /** The purchase made with the key, once it is HELD and its checks are running. */
    private String awaitHeld() throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (System.nanoTime() < until) {
            var held = app.db().strings("SELECT id FROM purchases WHERE idempotency_key = ? AND state = 'HELD'", key);
            if (!held.isEmpty()) {
                return held.getFirst();
            }
            Thread.sleep(5);
        }
        throw new AssertionError("the purchase never became HELD");
    }

    /** The sweeper's crash recovery, as if purchase.abandoned-after had passed (a test clock in the row). */
    private void recover(String id) {
        app.services().db().inTransaction(c -> Sql.update(c, "UPDATE purchases SET updated_at = ? WHERE id = ?",
                                                 OffsetDateTime.now().minusMinutes(1), id));
        assertThat(app.services().purchaseWorkers().sweepNow()).isEqualTo(1);
    }
}
