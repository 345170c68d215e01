package lastseat.purchase;

import lastseat.db.Sql;
import lastseat.inventory.Order;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A sold-out event, once a purchase here has found it so ({@link SoldOutHints}): the next buyers of a
 * quantity are told 409 by a read before their key's claim, the 409 stored for the key in one write and
 * no purchase made; the key of the purchase that took the last seat still gets its own 201; when a seat
 * comes back, a new buyer runs and buys it, but a request with a key already told 409 — its delayed
 * original, say — is told 409 again and buys nothing.
 */
class SoldOutBeforeClaimTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.shared();

    @Test
    void afterAReservationFoundTheEventSoldOutTheNextBuyersAreToldSoByAReadAndTheirKeysKeepIt() {
        String event = app.newEvent(2);
        // One seat held by a purchase that will be cancelled, one sold over HTTP.
        String heldId = holdOneSeat(event);
        String winnerKey = UUID.randomUUID().toString();
        Answer winner = app.client().purchaseQuantity(winnerKey, event, 1, "ada");
        assertThat(winner.status()).as(winner.toString()).isEqualTo(201);

        String firstKey = UUID.randomUUID().toString();
        Answer first = app.client().purchaseQuantity(firstKey, event, 1, "bob");
        String laterKey = UUID.randomUUID().toString();
        Answer later = app.client().purchaseQuantity(laterKey, event, 1, "cleo");
        Answer winnersRetry = app.client().purchaseQuantity(winnerKey, event, 1, "ada");

        assertThat(first.status()).as(first.toString()).isEqualTo(409);
        assertThat(first.type()).isEqualTo("sold-out");
        assertThat(later.status()).as(later.toString()).isEqualTo(409);
        assertThat(later.body()).as("the same answer as the reservation's refusal").isEqualTo(first.body());
        assertThat(keyStates(firstKey)).as("told by its reservation: claimed, then the 409 stored").containsExactly("DONE 409 claimed");
        assertThat(keyStates(laterKey)).as("told by the read: the 409 stored for the key in one write, never claimed in flight")
                                       .containsExactly("DONE 409 unclaimed");
        assertThat(winnersRetry.status()).as("the key that took the seat: its own answer, never sold out: " + winnersRetry)
                                         .isEqualTo(201);
        assertThat(winnersRetry.header("Idempotent-Replayed")).isEqualTo("true");

        assertThat(app.client().cancel(heldId).status()).as("the held seat comes back").isEqualTo(200);
        Answer latersOriginal = app.client().purchaseQuantity(laterKey, event, 1, "cleo");
        Answer newBuyer = app.client().purchaseQuantity(UUID.randomUUID().toString(), event, 1, "dan");

        assertThat(latersOriginal.status()).as("a request with a key told 409 buys nothing, even with a seat free: " + latersOriginal)
                                           .isEqualTo(409);
        assertThat(latersOriginal.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(newBuyer.status()).as("the seat that came back goes to a new buyer: " + newBuyer).isEqualTo(201);
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE idempotency_key IN (?, ?)", firstKey, laterKey))
                .as("no purchase under the keys told 409").isZero();
        assertThat(app.client().event(event).path("sold").asInt()).isEqualTo(2);
        everythingCameBack(event);
    }

    @Test
    void aHintedEventWhoseSeatsCameBackSellsToTheNextBuyer() {
        String event = app.newEvent(1);
        String heldId = holdOnlySeatAndBeRefused(event);

        assertThat(app.client().cancel(heldId).status()).isEqualTo(200);
        Answer bought = app.client().purchaseQuantity(UUID.randomUUID().toString(), event, 1, "ada");

        assertThat(bought.status()).as("the read finds the seat free and the purchase runs: " + bought).isEqualTo(201);
        assertThat(app.client().event(event).path("sold").asInt()).isEqualTo(1);
        everythingCameBack(event);
    }

    @Test
    void aHoldPastItsExpiryCountsAsFreeToTheReadAndItsSeatIsSold() {
        String event = app.newEvent(1);
        String heldId = holdOnlySeatAndBeRefused(event);

        app.services().db().inTransaction(c -> Sql.update(c, "UPDATE purchases SET hold_expires_at = ? WHERE id = ?",
                                                 OffsetDateTime.now().minusMinutes(1), heldId));
        Answer bought = app.client().purchaseQuantity(UUID.randomUUID().toString(), event, 1, "ada");

        assertThat(bought.status()).as("the expired hold's seat is free to the read, and the reservation takes it: " + bought)
                                   .isEqualTo(201);
        assertThat(app.db().purchaseState(heldId)).isEqualTo("EXPIRED");
        everythingCameBack(event);
    }

    /** A purchase holding one seat of {@code event}, made without HTTP (it will be cancelled or expired); its id. */
    private static String holdOneSeat(String event) {
        Purchases.Reservation held = app.services().purchases().reserve(
                new Order(event, null, 1, "grace", "grace@example.com", "tok_ok", "demo-shop", UUID.randomUUID().toString()));
        return ((Purchases.Reservation.Held) held).hold().purchaseId();
    }

    /** The one seat of {@code event} held, and a buyer told 409 by its reservation, which hints the event; the hold's id. */
    private static String holdOnlySeatAndBeRefused(String event) {
        String heldId = holdOneSeat(event);
        Answer refused = app.client().purchaseQuantity(UUID.randomUUID().toString(), event, 1, "bob");
        assertThat(refused.status()).as(refused.toString()).isEqualTo(409);
        return heldId;
    }

    /** I1–I4 hold, no seat of the event is held, and the permits and connections are back. */
    private static void everythingCameBack(String event) {
        Invariants.hold(app, event);
        Invariants.nothingHeld(app, event);
        Invariants.resourcesCameBack(app);
    }

    private static List<String> keyStates(String key) {
        return app.db().strings("SELECT state || ' ' || COALESCE(CAST(status AS VARCHAR), '-') || "
                                + "CASE WHEN claim_token IS NULL THEN ' unclaimed' ELSE ' claimed' END FROM idempotency_keys WHERE idem_key = ?", key);
    }
}
