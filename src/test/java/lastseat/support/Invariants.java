package lastseat.support;

import com.fasterxml.jackson.databind.JsonNode;
import lastseat.payment.PaymentGateway;
import lastseat.testkit.Ledger;

import com.github.tomakehurst.wiremock.verification.LoggedRequest;

import java.time.Duration;
import java.util.List;

import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The invariants of DESIGN.md checked against the database and the stubs' ledger, and the
 * resources that must come back after every test.
 */
public final class Invariants {
    private Invariants() {
    }

    /**
     * I1, I2 and I3 for one event: a confirmed purchase was captured exactly once, a released one
     * never, an open one at most once; and every payment request for a purchase carried its one key.
     */
    public static void hold(LastseatApp app, String eventId) {
        seatsAreConsistent(app, eventId);
        List<LoggedRequest> requests = app.stubs().findAll(postRequestedFor(urlPathEqualTo("/payments")));
        for (String purchase : app.db().strings("SELECT id || ' ' || state FROM purchases WHERE event_id = ?", eventId)) {
            String id = purchase.split(" ")[0];
            String state = purchase.split(" ")[1];
            long captures = Ledger.captures().stream().filter(p -> id.equals(p.purchaseId())).count();
            switch (state) {
                case "CONFIRMED", "REFUNDED" -> assertThat(captures).as("I3: %s purchase %s captured once", state, id).isEqualTo(1);
                case "RELEASED", "EXPIRED" -> assertThat(captures).as("I3: %s purchase %s never captured", state, id).isZero();
                default -> assertThat(captures).as("I3: open purchase %s captured at most once", id).isLessThanOrEqualTo(1);
            }
            assertThat(requests.stream().filter(r -> r.getBodyAsString().contains("\"purchaseId\":\"" + id + "\""))
                               .map(r -> r.getHeader("Idempotency-Key")).distinct().toList())
                    .as("I3: every payment request for %s carries its one key", id)
                    .allMatch(key -> key.equals(PaymentGateway.idempotencyKey(id)));
        }
    }

    /** I1 and I2, on the rows and on the event as the app shows it (where a lapsed hold already counts as available). */
    public static void seatsAreConsistent(LastseatApp app, String eventId) {
        seatsAreConsistent(app.db(), eventId);
        JsonNode event = app.client().event(eventId);
        assertThat(event.path("available").asInt() + event.path("held").asInt() + event.path("sold").asInt())
                .as("I2: available + held + sold = capacity, as shown").isEqualTo(event.path("capacity").asInt());
        assertThat(event.path("sold").asLong()).as("sold, as shown").isEqualTo(seats(app.db(), eventId, "SOLD"));
    }

    /** I1 and I2: seat states agree with their purchases and tickets, and add up to capacity. */
    public static void seatsAreConsistent(Db db, String eventId) {
        long sold = seats(db, eventId, "SOLD");
        assertThat(seats(db, eventId, "AVAILABLE") + seats(db, eventId, "HELD") + sold)
                .as("I2: available + held + sold = capacity")
                .isEqualTo(db.count("SELECT capacity FROM events WHERE id = ?", eventId));
        assertThat(db.count("SELECT COUNT(*) FROM (SELECT label FROM tickets WHERE event_id = ? GROUP BY label "
                            + "HAVING COUNT(*) > 1) doubles", eventId))
                .as("I1: no seat has two tickets").isZero();
        assertThat(db.count("SELECT COUNT(*) FROM tickets WHERE event_id = ?", eventId))
                .as("I1: every sold seat has exactly one ticket").isEqualTo(sold);
        assertThat(db.count("SELECT COUNT(*) FROM seats s JOIN purchases p ON p.id = s.purchase_id "
                            + "WHERE s.event_id = ? AND s.state = 'SOLD' AND p.state <> 'CONFIRMED'", eventId))
                .as("sold seats belong to confirmed purchases").isZero();
        assertThat(db.count("SELECT COUNT(*) FROM seats s JOIN purchases p ON p.id = s.purchase_id "
                            + "WHERE s.event_id = ? AND s.state = 'HELD' AND p.state NOT IN ('HELD', 'PAYING', 'PAYMENT_UNKNOWN', 'PAYMENT_UNRESOLVED')",
                            eventId))
                .as("held seats belong to open purchases").isZero();
    }

    private static long seats(Db db, String eventId, String state) {
        return db.count("SELECT COUNT(*) FROM seats WHERE event_id = ? AND state = ?", eventId, state);
    }

    /** Every bulkhead permit and pool connection is back. */
    public static void resourcesCameBack(LastseatApp app) {
        int permits = app.services().payments().config().permits();
        awaitTrue(() -> app.services().payments().availablePermits() == permits, "all " + permits + " payment permits back");
        awaitTrue(() -> app.services().db().activeConnections() == 0, "no pool connection still in use");
    }

    /** No seat of the event is held. */
    public static void nothingHeld(LastseatApp app, String eventId) {
        assertThat(app.client().event(eventId).path("held").asInt()).as("held seats").isZero();
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition, String what) {
        long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > until) {
                throw new AssertionError("expected " + what);
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for " + what);
            }
        }
    }
}
