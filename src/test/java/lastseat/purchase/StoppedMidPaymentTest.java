package lastseat.purchase;

import lastseat.db.Sql;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.Order;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Ledger;
import lastseat.web.Json;
import lastseat.web.Reply;
import lastseat.work.Deadline;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A purchase whose thread is interrupted while its payment is at the provider — what a server that
 * stops past its grace does to it — may have been charged: it is answered 202 (pending), never an
 * error that says nothing was charged, its key stays taken, and recovery and the reconciler settle
 * it from the provider's ledger.
 */
class StoppedMidPaymentTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("purchase.sweep-interval", "10m", "reconcile.interval", "10m", "reconcile.settle-time", "0ms"));

    @Test
    void aPurchaseCutDuringItsPaymentIsAnswered202AndSettledByTheProvidersLedger() throws Exception {
        String event = app.newEvent("A1");
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1)
                                    .willReturn(aResponse().withStatus(201).withFixedDelay(600).withTransformers("ledger")));
        String key = UUID.randomUUID().toString();
        byte[] body = ("{\"eventId\":\"" + event + "\"}").getBytes();
        PurchaseRoutes routes = app.services().purchaseRoutes();
        String token = ((IdempotencyKeys.Claim.Fresh) routes.keys().claim("demo-shop", key, IdempotencyKeys.fingerprint(body))).token();
        Order order = new Order(event, List.of("A1"), 1, "ada", "ada@example.com", "tok_ok", "demo-shop", key);
        AtomicReference<Reply> reply = new AtomicReference<>();

        Thread buyer = Thread.ofVirtual().start(() -> reply.set(routes.runFresh(key, token, order,
                                                                                 Deadline.after(Duration.ofMillis(800), System.nanoTime())).reply()));
        awaitPaymentAtTheProvider();
        buyer.interrupt();
        buyer.join(Duration.ofSeconds(5));

        assertThat(reply.get().status()).as(new String(reply.get().body())).isEqualTo(202);
        String id = Json.tree(new String(reply.get().body())).path("id").asText();
        assertThat(app.db().purchaseState(id)).as("left for recovery, seats held").isEqualTo("PAYING");
        assertThat(app.db().strings("SELECT state FROM idempotency_keys WHERE idem_key = ?", key))
                .as("the key stays taken: a retry must not start a second purchase").containsExactly("IN_FLIGHT");

        app.services().db().inTransaction(c -> Sql.update(c, "UPDATE purchases SET updated_at = ? WHERE id = ?",
                                                 OffsetDateTime.now().minusMinutes(1), id));
        app.services().purchaseWorkers().sweepNow();
        awaitCapture(id);
        app.services().purchaseWorkers().reconcileNow();
        assertThat(app.db().purchaseState(id)).isEqualTo("CONFIRMED");
        assertThat(Ledger.captures()).filteredOn(p -> id.equals(p.purchaseId())).hasSize(1);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    private static void awaitPaymentAtTheProvider() throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (app.stubs().getAllServeEvents().stream().noneMatch(e -> e.getRequest().getUrl().equals("/payments"))) {
            if (System.nanoTime() > until) {
                throw new AssertionError("the payment never reached the provider");
            }
            Thread.sleep(5);
        }
    }

    private static void awaitCapture(String id) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (Ledger.captures().stream().noneMatch(p -> id.equals(p.purchaseId()))) {
            if (System.nanoTime() > until) {
                throw new AssertionError("the provider never captured " + id);
            }
            Thread.sleep(10);
        }
    }
}
