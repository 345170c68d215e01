package lastseat.purchase;

import lastseat.checks.Checks;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.Order;
import lastseat.outside.Outside;
import lastseat.payment.PaymentGateway;
import lastseat.support.FakeOutside.Trouble;
import lastseat.support.InProcess;
import lastseat.web.Json;
import lastseat.web.Reply;
import lastseat.work.Deadline;
import lastseat.work.Latency;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fast tier: the answers to {@code POST /purchases} whose purchase may have been charged. Once a
 * payment may have left — for this request, or for an earlier one with the same key — no failure is
 * answered with a refusal, which would tell the buyer nothing was charged: an {@link Error} thrown after
 * the capture, or a database that cannot be read on a replay or a resume, is answered 202, "not known
 * yet, ask again", and the key stays with its purchase. The provider's ledger (the fake's) is the judge.
 * The busy database is one table's ({@link BusyTable}): {@code purchase_steps}, which only a full read of
 * a purchase touches, so the key's claim still works and the read of where the purchase stands fails.
 */
@Tag("fast")
class MoneyAnswersTest {
    private static final String CLIENT = "demo-shop";
    private final InProcess app = InProcess.start(Map.of("purchase.deadline", "300ms", "payment.max-wait", "300ms"));

    @AfterEach
    void close() {
        app.close();
    }

    @Test
    void anErrorThrownAfterTheProviderCapturedIsAnswered202AndThePurchaseIsSettledLater() throws Exception {
        String event = app.newEvent("A1");
        // The provider captures; then the JVM fails before the answer is read. (An InternalError, not an
        // OutOfMemoryError: JUnit rethrows that one itself, which would end the test run, not fail this test.)
        Outside oomAfterCapture = new Outside() {
            @Override
            public Answer post(String path, String json, Map<String, String> headers, Deadline deadline)
                    throws IOException, InterruptedException {
                Answer answer = app.outside.post(path, json, headers, deadline);
                if (path.equals(app.config.payment().path())) {
                    throw new InternalError("the JVM failed (a test's)");
                }
                return answer;
            }

            @Override
            public Answer post(String path, String json, Map<String, String> headers, Duration timeout)
                    throws IOException, InterruptedException {
                return app.outside.post(path, json, headers, timeout);
            }

            @Override
            public Answer get(String pathAndQuery, Duration timeout) throws IOException, InterruptedException {
                return app.outside.get(pathAndQuery, timeout);
            }
        };
        PaymentGateway payments = new PaymentGateway(oomAfterCapture, app.config.payment(), Latency.of(app.config.admission().callTime()));
        PurchaseFlow flow = new PurchaseFlow(new Checks(app.outside, app.config.checks()), payments, app.purchases,
                                             app.config.purchase(), app.clock);
        PurchaseRoutes routes = new PurchaseRoutes(flow, app.purchases, app.inventory, app.keys, app.config.purchase(),
                                                   app.config.admission(), new PurchaseMetrics(), payments);
        String key = UUID.randomUUID().toString();
        byte[] body = body(event);

        PurchaseAnswers.Answer answer = routes.admitted(key, body, order(event, key), deadline());

        String id = purchaseOf(event);
        assertThat(answer.reply().status()).as(text(answer.reply())).isEqualTo(202);
        assertThat(answer.reply().contentType()).as("never a problem").isEqualTo(Reply.JSON);
        assertThat(answer.tag()).isEqualTo(PurchaseAnswers.PENDING);
        assertThat(Json.tree(text(answer.reply())).path("id").asText()).as("the purchase, as it stands").isEqualTo(id);
        assertThat(app.outside.captures()).as("the provider holds the capture").hasSize(1);
        assertThat(app.state(id)).as("left for recovery, its seat held").isEqualTo("PAYING");
        assertThat(keyState(key)).as("the key stays with its purchase: a retry must not buy again").isEqualTo("IN_FLIGHT");
        assertThat(payments.availablePermits()).as("the payment's permit came back").isEqualTo(app.config.payment().permits());

        app.clock.advance(app.config.abandonedAge().plusSeconds(1));
        app.workers.sweepNow();
        app.clock.advance(app.config.reconcile().settleTime());
        app.workers.reconcileNow();
        app.workers.keepKeysNow();

        assertThat(app.state(id)).as("recovery and the reconciler settle it from the ledger").isEqualTo("CONFIRMED");
        assertThat(app.keys.claim(CLIENT, key, IdempotencyKeys.fingerprint(body)))
                .as("the key now answers the confirmed purchase")
                .isInstanceOfSatisfying(IdempotencyKeys.Claim.Replay.class, replay -> assertThat(replay.reply().status()).isEqualTo(201));
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aReplayedPendingAnswerWhosePurchaseCannotBeReadIsTheStored202NotABusyDatabase() throws Exception {
        String event = app.newEvent("A1");
        PurchaseRoutes routes = routes();
        String key = UUID.randomUUID().toString();
        byte[] body = body(event);
        app.outside.trouble(Trouble.LOSE_ANSWER);
        PurchaseAnswers.Answer first = routes.admitted(key, body, order(event, key), deadline());
        assertThat(first.reply().status()).as(text(first.reply())).isEqualTo(202);

        PurchaseAnswers.Answer replay;
        try (BusyTable busy = BusyTable.reads(app.database, "purchase_steps")) {
            replay = routes.admitted(key, body, order(event, key), deadline());
        }

        assertThat(replay.reply().status()).as(text(replay.reply())).isEqualTo(202);
        assertThat(replay.reply().body()).as("the stored answer, byte for byte").isEqualTo(first.reply().body());
        assertThat(replay.replayed()).isTrue();
        assertThat(replay.tag()).isEqualTo(PurchaseAnswers.REPLAYED);
        String id = purchaseOf(event);
        assertThat(app.state(id)).isEqualTo("PAYMENT_UNKNOWN");
        assertThat(app.outside.captures()).hasSize(1);
        assertThat(routes.admitted(key, body, order(event, key), deadline()).reply().status())
                .as("readable again: where it stands now").isEqualTo(202);
        settle(id, event);
    }

    @Test
    void aResumedKeyWhosePurchaseCannotBeReadIsAnswered202NotABusyDatabase() throws Exception {
        String event = app.newEvent("A1");
        PurchaseRoutes routes = routes();
        String key = UUID.randomUUID().toString();
        byte[] body = body(event);
        // Its process stopped after the payment went unknown, before it answered: the key is left in flight.
        assertThat(app.keys.claim(CLIENT, key, IdempotencyKeys.fingerprint(body))).isInstanceOf(IdempotencyKeys.Claim.Fresh.class);
        app.outside.trouble(Trouble.LOSE_ANSWER);
        assertThat(app.flow.purchase(order(event, key), deadline())).isInstanceOf(PurchaseOutcome.Pending.class);
        String id = purchaseOf(event);
        app.clock.advance(app.config.abandonedAge().plusSeconds(1));

        PurchaseAnswers.Answer resumed;
        try (BusyTable busy = BusyTable.reads(app.database, "purchase_steps")) {
            resumed = routes.admitted(key, body, order(event, key), deadline());
        }

        assertThat(resumed.reply().status()).as(text(resumed.reply())).isEqualTo(202);
        assertThat(resumed.reply().contentType()).as("never a problem").isEqualTo(Reply.JSON);
        assertThat(Json.tree(text(resumed.reply())).path("state").asText()).isEqualTo("PENDING");
        assertThat(app.state(id)).isEqualTo("PAYMENT_UNKNOWN");
        assertThat(keyState(key)).as("the key stays with its purchase").isEqualTo("IN_FLIGHT");
        assertThat(app.outside.captures()).hasSize(1);
        settle(id, event);
    }

    private void settle(String id, String event) throws InterruptedException {
        app.clock.advance(app.config.reconcile().settleTime());
        app.workers.reconcileNow();
        assertThat(app.state(id)).isEqualTo("CONFIRMED");
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    private PurchaseRoutes routes() {
        return new PurchaseRoutes(app.flow, app.purchases, app.inventory, app.keys, app.config.purchase(), app.config.admission(),
                                  new PurchaseMetrics(), app.payments);
    }

    private Deadline deadline() {
        return Deadline.after(app.config.purchase().deadline(), System.nanoTime());
    }

    private static byte[] body(String event) {
        return ("{\"eventId\":\"" + event + "\",\"seats\":[\"A1\"]}").getBytes(StandardCharsets.UTF_8);
    }

    private static Order order(String event, String key) {
        return new Order(event, List.of("A1"), 1, "ada", "ada@example.com", "tok_ok", CLIENT, key);
    }

    private String purchaseOf(String event) {
        return app.db.strings("SELECT id FROM purchases WHERE event_id = ?", event).getFirst();
    }

    private String keyState(String key) {
        return app.db.strings("SELECT state FROM idempotency_keys WHERE idem_key = ?", key).getFirst();
    }

    private static String text(Reply reply) {
        return new String(reply.body(), StandardCharsets.UTF_8);
    }
}
