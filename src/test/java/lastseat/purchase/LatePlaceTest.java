package lastseat.purchase;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A buyer refused a place while its event's last seats may still go waits for one only while the whole
 * path still fits after the wait ({@code Pace.roomToWait}); a place that comes back later is not taken.
 * Taken, it would reserve the last seat and call the checks only to be cut by the deadline: a 504, a
 * seat held for nothing, and an outside call the buyer pays for in time.
 *
 * <p>One payment permit, so the pace admits two purchases at once (twice the permits) and the process may
 * run more ({@code purchase.max-in-flight}): the third buyer is refused a place below the process's cap. The
 * fraud check takes {@link #FRAUD_MS}, and the pace first learns that from purchases at another event: then
 * the way to the payment is about 450 ms of the 700 ms a purchase's work has. Two buyers hold two of three
 * seats and are in their fraud checks when the third arrives: one seat is left, fewer than the purchases
 * this process may run, so the third may wait for a place. The holders' places come back when their checks
 * end, about 450 ms after the third arrived: it would then have under 250 ms of its work left, too little for a
 * 450 ms check. When the wait was bounded by the deadline alone (before {@code roomToWait}), the third took
 * that place, held the last seat and was answered 504 "during the fraud and tax checks".
 */
class LatePlaceTest {
    private static final int FRAUD_MS = 450;
    /** More than {@code Latency}'s ten samples, so the pace plans with what it measured, not its priors. */
    private static final int LEARNING_PURCHASES = 12;

    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("payment.permits", "1"));

    @Test
    void aBuyerWhoseSeatsMayStillGoIsNotGivenAPlaceTooLateForTheWholePath() throws Exception {
        app.stubs().stubFor(post(urlPathEqualTo("/fraud/checks")).atPriority(1)
                                    .willReturn(aResponse().withStatus(200).withFixedDelay(FRAUD_MS)
                                                        .withHeader("Content-Type", "application/json").withBodyFile("fraud-check-approve.json")));
        String learning = app.newEvent(LEARNING_PURCHASES);
        String lastSeats = app.newEvent(3);
        String late = UUID.randomUUID().toString();
        Answer refused;
        long refusedAt;
        List<Long> holdersAnsweredAt = new CopyOnWriteArrayList<>();
        List<Answer> holders = new ArrayList<>();
        try (ExecutorService buyers = Executors.newVirtualThreadPerTaskExecutor()) {
            // Two at a time, as the pace admits them: every one reaches its payment and is measured.
            for (int i = 0; i < LEARNING_PURCHASES; i += 2) {
                Future<Answer> first = buyers.submit(() -> app.client().purchaseQuantity(UUID.randomUUID().toString(), learning, 1, "learner"));
                Future<Answer> second = buyers.submit(() -> app.client().purchaseQuantity(UUID.randomUUID().toString(), learning, 1, "learner"));
                assertThat(List.of(first.get(10, TimeUnit.SECONDS), second.get(10, TimeUnit.SECONDS)))
                        .as("the pace's lessons: every purchase confirmed").allSatisfy(answer -> assertThat(answer.status()).isEqualTo(201));
            }
            List<Future<Answer>> holding = List.of(
                    buyers.submit(() -> answeredAt(app.client().purchaseQuantity(UUID.randomUUID().toString(), lastSeats, 1, "holder"), holdersAnsweredAt)),
                    buyers.submit(() -> answeredAt(app.client().purchaseQuantity(UUID.randomUUID().toString(), lastSeats, 1, "holder"), holdersAnsweredAt)));
            awaitFraudRequests(LEARNING_PURCHASES + 2);
            refused = app.client().purchaseQuantity(late, lastSeats, 1, "late");
            refusedAt = System.nanoTime();
            for (Future<Answer> holder : holding) {
                holders.add(holder.get(10, TimeUnit.SECONDS));
            }
        }

        assertThat(holders).as("both holders bought their seats").allSatisfy(answer -> assertThat(answer.status()).as(answer.toString()).isEqualTo(201));
        assertThat(refused.status()).as("told to come back, not cut by the deadline after a late place: " + refused).isEqualTo(503);
        assertThat(refused.json().path("type").asText()).isEqualTo("urn:lastseat:problem:overloaded");
        assertThat(refused.header("Retry-After")).as("Retry-After").isNotNull();
        assertThat(holdersAnsweredAt).as("answered before either place came back, not after waiting for one")
                                     .allSatisfy(at -> assertThat(at).isGreaterThan(refusedAt));
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE idempotency_key = ?", late)).as("nothing reserved for it").isZero();
        assertThat(app.db().count("SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = ?", late)).as("its key not stored").isZero();
        app.stubs().verify(LEARNING_PURCHASES + 2, postRequestedFor(urlPathEqualTo("/fraud/checks")));
        assertThat(app.client().event(lastSeats).path("available").asInt()).as("the last seat still free").isEqualTo(1);
        Invariants.nothingHeld(app, lastSeats);
        Invariants.hold(app, lastSeats);
        Invariants.hold(app, learning);
        Invariants.resourcesCameBack(app);
    }

    private static Answer answeredAt(Answer answer, List<Long> at) {
        at.add(System.nanoTime());
        return answer;
    }

    private static void awaitFraudRequests(int count) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (app.stubs().findAll(postRequestedFor(urlPathEqualTo("/fraud/checks"))).size() < count) {
            assertThat(System.nanoTime()).as("both holders' fraud checks reached the stub within 5 s").isLessThan(until);
            Thread.sleep(2);
        }
    }
}
