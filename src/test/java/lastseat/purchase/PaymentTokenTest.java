package lastseat.purchase;

import lastseat.db.Sql;
import lastseat.inventory.Order;
import lastseat.support.FakeOutside.Trouble;
import lastseat.support.InProcess;
import lastseat.work.Deadline;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fast tier: a purchase keeps its payment token only while a charge may still be sent with it — HELD,
 * PAYING, PAYMENT_UNKNOWN and PAYMENT_UNRESOLVED (the reconciler sends the same charge again) — and
 * drops it in the transaction that moves it to CONFIRMED, RELEASED, EXPIRED or REFUNDED, on every path
 * the product takes there: the flow, a decline, the fraud check, a cancel, the sweeper, the reconciler.
 */
@Tag("fast")
class PaymentTokenTest {
    private final InProcess app = InProcess.start(Map.of("purchase.deadline", "300ms", "payment.max-wait", "300ms"));

    @AfterEach
    void close() {
        app.close();
    }

    @Test
    void aConfirmedPurchaseKeepsNoToken() throws Exception {
        String event = app.newEvent("A1");

        assertThat(buy(event, "ada", "tok_ok")).isInstanceOf(PurchaseOutcome.Confirmed.class);

        assertThat(tokenOf(onlyPurchase(event))).isNull();
        app.resourcesCameBack(event);
    }

    @Test
    void aPurchaseReleasedByADeclineOrTheFraudCheckKeepsNoToken() throws Exception {
        String declined = app.newEvent("A1");
        String fraud = app.newEvent("A1");

        buy(declined, "ada", "tok_declined");
        buy(fraud, "fraudster", "tok_ok");

        for (String event : List.of(declined, fraud)) {
            String id = onlyPurchase(event);
            assertThat(app.state(id)).isEqualTo("RELEASED");
            assertThat(tokenOf(id)).as("token of %s", id).isNull();
            app.resourcesCameBack(event);
        }
    }

    @Test
    void aHeldPurchaseKeepsItsTokenUntilItIsCancelledOrExpired() {
        String event = app.newEvent("A1", "A2");
        String cancelled = hold(event, "A1");
        String expired = hold(event, "A2");
        assertThat(tokenOf(cancelled)).isEqualTo("tok_ok");
        assertThat(tokenOf(expired)).isEqualTo("tok_ok");

        app.purchases.cancel(cancelled, java.util.Optional.empty());
        app.clock.advance(app.config.purchase().holdTtl().plusSeconds(1));
        app.workers.sweepNow();

        assertThat(app.state(cancelled)).isEqualTo("RELEASED");
        assertThat(app.state(expired)).isEqualTo("EXPIRED");
        assertThat(tokenOf(cancelled)).isNull();
        assertThat(tokenOf(expired)).isNull();
        app.resourcesCameBack(event);
    }

    @Test
    void anOpenPaymentKeepsItsTokenForTheReconcilerWhichChargesWithItAndThenDropsIt() throws Exception {
        String event = app.newEvent("A1");
        app.outside.trouble(Trouble.LOSE_REQUEST);
        assertThat(buy(event, "ada", "tok_ok")).isInstanceOf(PurchaseOutcome.Pending.class);
        String id = onlyPurchase(event);
        assertThat(app.state(id)).isEqualTo("PAYMENT_UNKNOWN");
        assertThat(tokenOf(id)).isEqualTo("tok_ok");
        assertThat(app.purchases.giveUp(id, "a test")).isInstanceOf(Purchases.Moved.Done.class);
        assertThat(tokenOf(id)).as("PAYMENT_UNRESOLVED is still open").isEqualTo("tok_ok");

        app.clock.advance(app.config.reconcile().settleTime());
        app.workers.reconcileNow();

        assertThat(app.outside.calls()).as("nothing at the provider for the key: the charge was sent again, with the token")
                .endsWith("GET /payments", "POST /payments");
        assertThat(app.state(id)).isEqualTo("CONFIRMED");
        assertThat(app.outside.captures()).hasSize(1);
        assertThat(tokenOf(id)).isNull();
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aCaptureWhoseSeatsAreGoneIsRefundedAndKeepsNoToken() throws Exception {
        String event = app.newEvent("A1");
        app.outside.trouble(Trouble.LOSE_ANSWER);
        buy(event, "ada", "tok_ok");
        String id = onlyPurchase(event);
        // Something outside the state machine took the seats: the capture can only be refunded.
        app.database.inTransaction(c -> Sql.update(c, "UPDATE seats SET state = 'AVAILABLE', purchase_id = NULL WHERE purchase_id = ?", id));

        app.clock.advance(app.config.reconcile().settleTime());
        app.workers.reconcileNow();

        assertThat(app.state(id)).isEqualTo("REFUNDED");
        assertThat(tokenOf(id)).isNull();
        app.resourcesCameBack(event);
    }

    private PurchaseOutcome buy(String event, String buyer, String token) throws InterruptedException {
        return app.flow.purchase(new Order(event, List.of("A1"), 1, buyer, buyer + "@example.com", token, "demo-shop",
                                           UUID.randomUUID().toString()),
                                 Deadline.after(app.config.purchase().deadline(), System.nanoTime()));
    }

    private String hold(String event, String seat) {
        return ((Purchases.Reservation.Held) app.purchases.reserve(new Order(event, List.of(seat), 1, "ada", "ada@example.com",
                "tok_ok", "demo-shop", UUID.randomUUID().toString()))).hold().purchaseId();
    }

    private String tokenOf(String id) {
        return app.db.strings("SELECT payment_token FROM purchases WHERE id = ?", id).getFirst();
    }

    private String onlyPurchase(String event) {
        return app.db.strings("SELECT id FROM purchases WHERE event_id = ?", event).getFirst();
    }
}
