package lastseat.support;

import com.fasterxml.jackson.databind.JsonNode;
import lastseat.payment.PaymentGateway;
import lastseat.stubs.Ledger;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The invariants of DESIGN.md checked against the database and the stubs' ledger, and the
 * resources that must come back after every test.
 */
public final class Invariants {
    private Invariants() {
    }

    /** I1, I2 and I3 for one event (no purchase of it may be PAYMENT_UNKNOWN). */
    public static void hold(TestApp app, String eventId) {
        seatsAreConsistent(app, eventId);
        List<String> confirmed = app.db.strings(
                "SELECT id FROM purchases WHERE event_id = ? AND state = 'CONFIRMED'", eventId);
        List<String> mayBeCharged = app.db.strings(
                "SELECT id FROM purchases WHERE event_id = ? AND state IN ('CONFIRMED', 'REFUNDED', 'PAYMENT_UNKNOWN')", eventId);
        List<String> all = app.db.strings("SELECT id FROM purchases WHERE event_id = ?", eventId);
        for (String id : confirmed) {
            assertThat(Ledger.payments()).as("I3: confirmed purchase %s was charged once", id)
                    .filteredOn(p -> p.key().equals(PaymentGateway.idempotencyKey(id))).hasSize(1);
        }
        for (Ledger.Payment payment : Ledger.payments()) {
            all.stream().filter(id -> payment.key().equals(PaymentGateway.idempotencyKey(id))).findFirst()
                    .ifPresent(id -> assertThat(mayBeCharged).as("I3: purchase %s was charged, so it may not be released", id)
                            .contains(id));
        }
    }

    /** I1 and I2: seat states agree with their purchases and tickets, and add up to capacity. */
    public static void seatsAreConsistent(TestApp app, String eventId) {
        JsonNode event = app.client.event(eventId);
        assertThat(event.path("available").asInt() + event.path("held").asInt() + event.path("sold").asInt())
                .as("I2: available + held + sold = capacity").isEqualTo(event.path("capacity").asInt());
        assertThat(app.db.count("SELECT COUNT(*) FROM (SELECT label FROM tickets WHERE event_id = ? GROUP BY label "
                                + "HAVING COUNT(*) > 1) doubles", eventId))
                .as("I1: no seat has two tickets").isZero();
        assertThat(app.db.count("SELECT COUNT(*) FROM tickets WHERE event_id = ?", eventId))
                .as("I1: every sold seat has exactly one ticket").isEqualTo(event.path("sold").asLong());
        assertThat(app.db.count("SELECT COUNT(*) FROM seats s JOIN purchases p ON p.id = s.purchase_id "
                                + "WHERE s.event_id = ? AND s.state = 'SOLD' AND p.state <> 'CONFIRMED'", eventId))
                .as("sold seats belong to confirmed purchases").isZero();
        assertThat(app.db.count("SELECT COUNT(*) FROM seats s JOIN purchases p ON p.id = s.purchase_id "
                                + "WHERE s.event_id = ? AND s.state = 'HELD' AND p.state NOT IN ('HELD', 'PAYING', 'PAYMENT_UNKNOWN')",
                                eventId))
                .as("held seats belong to open purchases").isZero();
    }

    /** Every bulkhead permit and pool connection is back. */
    public static void resourcesCameBack(TestApp app) {
        int permits = app.services().payments().config().permits();
        awaitTrue(() -> app.services().payments().availablePermits() == permits, "all " + permits + " payment permits back");
        awaitTrue(() -> app.services().db().activeConnections() == 0, "no pool connection still in use");
    }

    /** No seat of the event is held. */
    public static void nothingHeld(TestApp app, String eventId) {
        assertThat(app.client.event(eventId).path("held").asInt()).as("held seats").isZero();
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition, String what) {
        long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > until) {
                throw new AssertionError("expected " + what);
            }
            Thread.onSpinWait();
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for " + what);
            }
        }
    }
}
