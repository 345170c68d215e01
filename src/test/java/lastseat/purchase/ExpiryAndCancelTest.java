package lastseat.purchase;

import lastseat.inventory.Hold;
import lastseat.inventory.Order;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Ledger;
import lastseat.testkit.Together;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A hold's end: expiry by the sweeper or by a later buyer who wants the seat, never while its
 * payment is in flight (so a capture that comes after the hold's expiry still gets its seats); the
 * buyer's cancel. Holds last 300 ms here and the background jobs only run when a test asks, so every
 * sweep is one the test made.
 */
class ExpiryAndCancelTest {
    private static final Duration TTL = Duration.ofMillis(300);
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("purchase.hold-ttl", TTL.toMillis() + "ms",
                                                           "purchase.sweep-interval", "10m",
                                                           "reconcile.interval", "10m"));

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
    void twoSweepersRacingExpireAnExpiredHoldOnceAndItsSeatComesBackOnce() {
        Hold hold = hold("A1");
        awaitExpiry(hold);

        List<Integer> moved = Together.run(2, i -> app.services().purchaseWorkers().sweepNow());

        assertThat(moved.stream().mapToInt(Integer::intValue).sum()).as("moved by the two sweepers together").isEqualTo(1);
        assertThat(app.db().purchaseState(hold.purchaseId())).isEqualTo("EXPIRED");
        assertThat(app.client().event(event).path("available").asInt()).isEqualTo(1);
        assertThat(app.client().purchaseView(hold.purchaseId()).path("timeline").findValuesAsText("step"))
                .containsExactly("expire");
    }

    @Test
    void anExpiredHoldCountsAsAvailableBeforeTheSweeperRunsAndALaterBuyerGetsTheSeat() {
        Hold hold = hold("A1");
        awaitExpiry(hold);

        String stateBefore = app.db().purchaseState(hold.purchaseId());
        int availableBefore = app.client().event(event).path("available").asInt();
        Answer later = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(stateBefore).as("nobody has expired it yet").isEqualTo("HELD");
        assertThat(availableBefore).as("reads treat the expired hold as available").isEqualTo(1);
        assertThat(later.status()).as(later.toString()).isEqualTo(201);
        assertThat(app.db().purchaseState(hold.purchaseId())).isEqualTo("EXPIRED");
        assertThat(app.services().purchaseWorkers().sweepNow()).as("nothing left for the sweeper").isZero();
        assertThat(app.client().event(event).path("sold").asInt()).isEqualTo(1);
    }

    @Test
    void aPaymentInFlightPastTheHoldsExpiryIsNeitherExpiredNorRefundedItsLateCaptureIsConfirmed() {
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1)
                                    .willReturn(aResponse().withStatus(201).withFixedDelay(500).withTransformers("ledger")));
        var sweeps = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            // Sweep while the payment is in flight and the hold has expired: it must not be touched.
            awaitState("PAYING");
            sleepPast(TTL.plusMillis(50));
            return app.services().purchaseWorkers().sweepNow();
        });

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(sweeps.join()).as("the sweeper never expires a hold whose payment is in flight").isZero();
        // One rule for the flow and the reconciler: nobody could take the seats of a purchase whose payment was
        // open, so a capture after the hold's expiry still buys them.
        assertThat(answer.status()).as(answer.toString()).isEqualTo(201);
        String id = answer.json().path("id").asText();
        assertThat(Instant.parse(answer.json().path("holdExpiresAt").asText())).as("confirmed past its hold's expiry")
                .isBefore(Instant.now());
        assertThat(app.db().purchaseState(id)).isEqualTo("CONFIRMED");
        assertThat(Ledger.captures()).as("captured once").hasSize(1);
        assertThat(app.db().strings("SELECT dedupe_key FROM outbox WHERE purchase_id = ? ORDER BY kind", id))
                .as("no refund; the confirmation email once").containsExactly(id + ":confirmation-email");
        assertThat(app.client().event(event).path("sold").asInt()).as("the seat is sold").isEqualTo(1);
    }

    @Test
    void aBuyerCancelsAHeldPurchaseOnceAndASecondCancelIsRefusedChangingNothing() {
        Hold hold = hold("A1");

        Answer first = app.client().cancel(hold.purchaseId());
        Answer second = app.client().cancel(hold.purchaseId());
        Answer unknown = app.client().cancel(UUID.randomUUID().toString());

        assertThat(first.status()).as(first.toString()).isEqualTo(200);
        assertThat(first.json().path("state").asText()).isEqualTo("RELEASED");
        assertThat(second.status()).isEqualTo(409);
        assertThat(second.json().path("type").asText()).isEqualTo("urn:lastseat:problem:purchase-not-cancellable");
        assertThat(second.json().path("state").asText()).isEqualTo("RELEASED");
        assertThat(unknown.status()).isEqualTo(404);
        assertThat(app.client().event(event).path("available").asInt()).as("the seat came back once").isEqualTo(1);
    }

    @Test
    void aConfirmedPurchaseCannotBeCancelled() {
        Answer bought = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
        String id = bought.json().path("id").asText();

        Answer cancel = app.client().cancel(id);

        assertThat(bought.status()).isEqualTo(201);
        assertThat(cancel.status()).isEqualTo(409);
        assertThat(cancel.json().path("detail").asText()).contains("CONFIRMED");
        assertThat(app.db().purchaseState(id)).isEqualTo("CONFIRMED");
        assertThat(app.client().event(event).path("sold").asInt()).isEqualTo(1);
    }

    @Test
    void aCancelWhileTheChecksRunStopsThePurchaseBeforeAnyPayment() {
        app.stubs().stubFor(post(urlPathEqualTo("/fraud/checks")).atPriority(1).willReturn(aResponse()
                .withStatus(200).withHeader("Content-Type", "application/json")
                .withBodyFile("fraud-check-approve.json").withFixedDelay(400)));
        var cancel = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            String id = awaitState("HELD");
            return app.client().cancel(id);
        });

        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");

        assertThat(cancel.join().status()).isEqualTo(200);
        assertThat(answer.status()).as(answer.toString()).isEqualTo(409);
        assertThat(answer.json().path("type").asText()).isEqualTo("urn:lastseat:problem:purchase-cancelled");
        app.stubs().verify(0, postRequestedFor(urlPathEqualTo("/payments")));
        Invariants.nothingHeld(app, event);
    }

    private Hold hold(String seat) {
        return ((Purchases.Reservation.Held) app.services().purchases().reserve(new Order(event, List.of(seat), 1, "ada",
                "ada@example.com", "tok_ok", "demo-shop", UUID.randomUUID().toString()))).hold();
    }

    private static void awaitExpiry(Hold hold) {
        sleepPast(Duration.between(Instant.now(), hold.expiresAt()).plusMillis(20));
    }

    /** Waits (bounded) until the event's purchase is in {@code state}; returns its id. */
    private String awaitState(String state) {
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (System.nanoTime() < until) {
            List<String> ids = app.db().strings("SELECT id FROM purchases WHERE event_id = ? AND state = ?", event, state);
            if (!ids.isEmpty()) {
                return ids.getFirst();
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("no purchase of " + event + " reached " + state);
    }

    /** Lets the clock pass a hold's expiry: the thing under test is time itself. */
    private static void sleepPast(Duration duration) {
        if (duration.isNegative()) {
            return;
        }
        try {
            Thread.sleep(duration);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
