package lastseat.purchase;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Together;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.Map;
import java.util.UUID;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The deadline passes for 30 purchases at once while the pool has 2 connections: every release must
 * still reach the database. It does because the outcome is written by the purchase's own thread,
 * which the scope never interrupts (an interrupted thread's JDBC work can fail, and a pool wait
 * interrupted by the deadline would throw), and which waits for a connection at most
 * {@code db.connection-timeout}.
 */
class BusyPoolTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("db.pool-size", "2", "db.connection-timeout", "2s"));

    @Test
    void anInterruptedThreadCannotRecordAnOutcomeWhileThePoolIsBusyButThePurchaseThreadCan() throws Exception {
        var db = app.services().db();
        var busy = new java.util.concurrent.CountDownLatch(2);
        var letGo = new java.util.concurrent.CountDownLatch(1);
        try (var holders = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 2; i++) {
                holders.submit(() -> db.read(c -> {
                    busy.countDown();
                    try {
                        letGo.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return null;
                }));
            }
            busy.await();

            Thread.currentThread().interrupt();
            Throwable unsafe = org.assertj.core.api.Assertions.catchThrowable(() -> db.read(c -> c.isValid(1)));
            Thread.interrupted();
            var waiting = java.util.concurrent.CompletableFuture.supplyAsync(() -> db.read(c -> c.isValid(1)));
            letGo.countDown();

            assertThat(unsafe).as("a write attempted from an interrupted thread on a busy pool")
                    .isInstanceOf(lastseat.db.DatabaseException.class);
            assertThat(waiting.get()).as("the same write from a thread that is not interrupted").isTrue();
        }
        Invariants.resourcesCameBack(app);
    }

    @Test
    void everyHoldIsReleasedWhenThirtyDeadlinesPassTogetherOnABusyPool() {
        String event = app.newEvent(30);
        app.stubs().stubFor(post(urlPathEqualTo("/fraud/checks")).atPriority(1).willReturn(aResponse()
                .withStatus(200).withHeader("Content-Type", "application/json")
                .withBodyFile("fraud-check-approve.json").withFixedDelay(2000)));

        List<Answer> answers = Together.run(30, i -> app.client().purchaseSeats(UUID.randomUUID().toString(), event,
                                                                                 Integer.toString(i + 1)));

        assertThat(answers).allSatisfy(a -> {
            assertThat(a.status()).as(a.toString()).isEqualTo(504);
            assertThat(a.elapsedMillis()).as("deadline + the pool's longest wait").isLessThan(800 + 2000);
        });
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ? AND state <> 'RELEASED'", event)).isZero();
        Invariants.nothingHeld(app, event);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }
}
