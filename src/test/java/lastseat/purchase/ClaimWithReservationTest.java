package lastseat.purchase;

import lastseat.db.DatabaseBusy;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.Order;
import lastseat.support.InProcess;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A new {@code Idempotency-Key} is claimed inside the reservation's transaction ({@link Purchases#reserve(Order,
 * Purchases.FirstWrite)}): the key and the purchase commit together, one commit where there were two.
 * What must still hold: a key found taken there leaves nothing written (no second hold for one key); a
 * missed seat keeps the key's claim, so its refusal can be stored and replayed; a reservation that fails
 * takes the claim with it, so no key is left claimed by a request that did nothing. The race of one key
 * sent many times at once is {@code IdempotencyTest}'s, over HTTP.
 */
class ClaimWithReservationTest {
    private static final String CLIENT = "demo-shop";
    private final InProcess app = InProcess.start();
    private final String key = UUID.randomUUID().toString();

    @AfterEach
    void close() {
        app.close();
    }

    @Test
    void aNewKeyAndItsReservationCommitTogether() {
        String event = app.newEvent("A1");
        IdempotencyKeys.NewClaim claim = app.keys.newClaim(CLIENT, key, "body");

        Optional<Purchases.Reservation> made = app.purchases.reserve(order(event), c -> app.keys.writeIn(c, claim));

        assertThat(made).containsInstanceOf(Purchases.Reservation.Held.class);
        String id = ((Purchases.Reservation.Held) made.orElseThrow()).hold().purchaseId();
        assertThat(app.state(id)).isEqualTo("HELD");
        assertThat(app.db.strings("SELECT state || ' ' || claim_token FROM idempotency_keys WHERE idem_key = ?", key))
                .containsExactly("IN_FLIGHT " + claim.token());
        expireHolds();
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aKeyFoundTakenInTheReservationsTransactionLeavesNothingWritten() {
        String event = app.newEvent("A1");
        String earlier = ((IdempotencyKeys.Claim.Fresh) app.keys.claim(CLIENT, key, "body")).token();

        Optional<Purchases.Reservation> made = app.purchases.reserve(order(event),
                                                                     c -> app.keys.writeIn(c, app.keys.newClaim(CLIENT, key, "body")));

        assertThat(made).as("no reservation for a key another request holds").isEmpty();
        assertThat(app.db.count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).isZero();
        assertThat(app.db.count("SELECT COUNT(*) FROM seats WHERE event_id = ? AND state = 'AVAILABLE'", event)).isEqualTo(1);
        assertThat(app.db.strings("SELECT claim_token FROM idempotency_keys WHERE idem_key = ?", key))
                .as("the earlier claim untouched").containsExactly(earlier);
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aMissedSeatUndoesTheReservationButKeepsTheClaimForItsRefusal() {
        String event = app.newEvent("A1");
        Purchases.Reservation.Held other = (Purchases.Reservation.Held) app.purchases.reserve(
                new Order(event, List.of("A1"), 1, "bob", "bob@example.com", "tok_ok", CLIENT, UUID.randomUUID().toString()));
        IdempotencyKeys.NewClaim claim = app.keys.newClaim(CLIENT, key, "body");

        Optional<Purchases.Reservation> made = app.purchases.reserve(order(event), c -> app.keys.writeIn(c, claim));

        assertThat(made).hasValueSatisfying(refused -> assertThat(refused).isEqualTo(
                new Purchases.Reservation.Refused(new PurchaseOutcome.Refusal.SeatsTaken(List.of("A1")))));
        assertThat(app.db.count("SELECT COUNT(*) FROM purchases WHERE idempotency_key = ?", key)).isZero();
        assertThat(app.db.strings("SELECT state FROM idempotency_keys WHERE idem_key = ?", key)).containsExactly("IN_FLIGHT");
        assertThat(app.keys.forget(CLIENT, key, claim.token())).as("the refusal's request owns the key")
                .isEqualTo(IdempotencyKeys.Ending.LET_GO);
        expireHolds();
        assertThat(app.state(other.hold().purchaseId())).isEqualTo("EXPIRED");
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aReservationThatFailsTakesTheKeysClaimWithIt() {
        String event = app.newEvent("A1");
        IdempotencyKeys.NewClaim claim = app.keys.newClaim(CLIENT, key, "body");

        try (BusyTable busy = BusyTable.inserts(app.database, "purchases")) {
            assertThatThrownBy(() -> app.purchases.reserve(order(event), c -> app.keys.writeIn(c, claim)))
                    .isInstanceOf(DatabaseBusy.class);
        }

        assertThat(app.db.count("SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = ?", key))
                .as("no key left claimed by a request that did nothing").isZero();
        assertThat(app.db.count("SELECT COUNT(*) FROM seats WHERE event_id = ? AND state = 'AVAILABLE'", event)).isEqualTo(1);
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    private Order order(String event) {
        return new Order(event, List.of("A1"), 1, "ada", "ada@example.com", "tok_ok", CLIENT, key);
    }

    /** Every hold past its expiry, swept: the seats come back as recovery gives them back. */
    private void expireHolds() {
        app.clock.advance(java.time.Duration.ofHours(1));
        app.workers.sweepNow();
    }
}
