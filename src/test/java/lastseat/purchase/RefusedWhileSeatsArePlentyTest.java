package lastseat.purchase;

import lastseat.db.Sql;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.support.Waits;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A buyer refused a place waits for the purchases admitted before it to take their seats only when
 * that can change its answer. With one place ({@code purchase.max-in-flight} 1) held by a purchase stuck
 * before its reservation (another transaction holds every seat's row; the deadline is 5 s and the
 * database's lock wait longer, so that it stays stuck until the test lets the rows go):
 * <ul>
 * <li>at an event with plenty of free seats, refused buyers are answered 503 at once — the first by a
 *     read of its own (the event not read before), the next with that count in hand, a later one by a
 *     read afresh once that count went stale — where each used to wait half its deadline for the stuck
 *     purchase and then give the same answer; nothing changes;</li>
 * <li>at an event of 11 seats where the purchase ahead asks for 10, a refused buyer asking for 2 still
 *     waits — the count shows 11 free, but what the purchase ahead may take is counted as gone — and is
 *     told 409 when it takes them: never 503 where the seats were about to go.</li>
 * </ul>
 */
class RefusedWhileSeatsArePlentyTest {
    private static final long DEADLINE_MS = 5000;
    /** A refused buyer's wait for those ahead: half its deadline. */
    private static final long WAIT_MS = DEADLINE_MS / 2;
    /** A count older than this is read again ({@code PurchaseRoutes.PLENTY_FRESH}, 100 ms) — with room to spare. */
    private static final long STALE_MS = 250;

    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("purchase.max-in-flight", "1",
                                                           "purchase.deadline", DEADLINE_MS + "ms", "db.lock-timeout", "10s"));

    @Test
    void aBuyerRefusedAPlaceWhileSeatsArePlentyIsAnswered503WithoutWaitingForThePurchaseAhead() throws Exception {
        String event = app.newEvent(50);
        String stuckKey = UUID.randomUUID().toString();
        String[] refusedKeys = {UUID.randomUUID().toString(), UUID.randomUUID().toString(), UUID.randomUUID().toString()};
        Answer first;
        Answer next;
        Answer later;
        Answer stuck;
        boolean stillStuck;
        try (ExecutorService buyers = Executors.newVirtualThreadPerTaskExecutor();
             RowsHeld held = RowsHeld.of(event, buyers)) {
            Future<Answer> ahead = buyers.submit(() -> app.client().purchaseQuantity(stuckKey, event, 1, "stuck"));
            Waits.until(() -> admission().available() == 0, "the purchase ahead holding the only place");

            first = app.client().purchaseQuantity(refusedKeys[0], event, 1, "first");
            next = app.client().purchaseQuantity(refusedKeys[1], event, 1, "next");
            Thread.sleep(STALE_MS);
            later = app.client().purchaseQuantity(refusedKeys[2], event, 1, "later");
            stillStuck = admission().available() == 0;

            held.letGo();
            stuck = ahead.get(10, TimeUnit.SECONDS);
        }

        assertThat(first.elapsedMillis()).as("the event's first refused buyer, by a read of its own: at once, not after the wait").isLessThan(WAIT_MS / 2);
        assertThat(next.elapsedMillis()).as("with a count read a moment ago: at once, not after the wait").isLessThan(WAIT_MS / 2);
        assertThat(later.elapsedMillis()).as("with a count read afresh, the last one being stale: at once").isLessThan(WAIT_MS / 2);
        assertThat(stillStuck).as("the purchase ahead held its place through all three refusals").isTrue();

        for (Answer refused : new Answer[] {first, next, later}) {
            assertThat(refused.status()).as(refused.toString()).isEqualTo(503);
            assertThat(refused.type()).isEqualTo("too-many-purchases");
            assertThat(refused.header("Retry-After")).isNotNull();
        }
        assertThat(stuck.status()).as("the purchase ahead, once the rows were let go: " + stuck).isEqualTo(201);
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).as("only the purchase ahead reserved").isEqualTo(1);
        assertThat(app.db().count("SELECT COUNT(*) FROM idempotency_keys WHERE idem_key IN (?, ?, ?)", (Object[]) refusedKeys))
                .as("no key of a refused buyer stored").isZero();
        everythingCameBack(event);
    }

    @Test
    void aBuyerRefusedAPlaceWhoseSeatsThePurchaseAheadMayTakeWaitsAndIsToldTheyAreGone() throws Exception {
        String event = app.newEvent(11);
        String refusedKey = UUID.randomUUID().toString();
        Answer refused;
        Answer stuck;
        try (ExecutorService buyers = Executors.newVirtualThreadPerTaskExecutor();
             RowsHeld held = RowsHeld.of(event, buyers)) {
            Future<Answer> ahead = buyers.submit(() -> app.client().purchaseQuantity(UUID.randomUUID().toString(), event, 10, "stuck"));
            Waits.until(() -> admission().available() == 0, "the purchase ahead holding the only place");
            // 11 seats free when it looks, 1 once the purchase ahead has its 10: not plenty, whatever the count says now.
            Future<Answer> waiting = buyers.submit(() -> app.client().purchaseQuantity(refusedKey, event, 2, "refused"));
            Waits.until(() -> admission().awaitingReservations() == 1, "the refused buyer waiting for the purchase ahead");

            held.letGo();
            refused = waiting.get(10, TimeUnit.SECONDS);
            stuck = ahead.get(10, TimeUnit.SECONDS);
        }

        assertThat(stuck.status()).as(stuck.toString()).isEqualTo(201);
        assertThat(refused.status()).as("the purchase ahead took 10 of the 11 seats: " + refused).isEqualTo(409);
        assertThat(refused.type()).isEqualTo("sold-out");
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).as("only the purchase ahead reserved").isEqualTo(1);
        assertThat(app.client().event(event).path("sold").asInt()).as("the purchase ahead's seats").isEqualTo(10);
        assertThat(app.db().strings("SELECT state || ' ' || CAST(status AS VARCHAR) FROM idempotency_keys WHERE idem_key = ?", refusedKey))
                .as("the 409 stored for the refused key in one write: a retry is told the same").containsExactly("DONE 409");
        everythingCameBack(event);
    }

    private static Admission admission() {
        return app.services().purchaseRoutes().admission();
    }

    private static void everythingCameBack(String event) {
        assertThat(admission().available()).as("the place back").isEqualTo(1);
        assertThat(admission().awaitingReservations()).as("no refused buyer left waiting").isZero();
        Invariants.hold(app, event);
        Invariants.nothingHeld(app, event);
        Invariants.resourcesCameBack(app);
    }

    /** Every seat row of an event locked by a transaction of the test's, which changes nothing and rolls back when let go. */
    private static final class RowsHeld implements AutoCloseable {
        private final CountDownLatch letGo = new CountDownLatch(1);
        private Future<Integer> holder;

        static RowsHeld of(String event, ExecutorService on) throws Exception {
            RowsHeld held = new RowsHeld();
            CountDownLatch locked = new CountDownLatch(1);
            held.holder = on.submit(() -> app.services().db().inTransaction(c -> {
                int rows = Sql.list(c, "SELECT label FROM seats WHERE event_id = ? FOR UPDATE", rs -> rs.getString(1), event).size();
                locked.countDown();
                Waits.quietly(held.letGo);
                c.rollback();
                return rows;
            }));
            assertThat(locked.await(5, TimeUnit.SECONDS)).as("the event's seat rows locked").isTrue();
            return held;
        }

        void letGo() throws Exception {
            letGo.countDown();
            assertThat(holder.get(10, TimeUnit.SECONDS)).as("seat rows the test held").isPositive();
        }

        @Override
        public void close() {
            letGo.countDown();
        }
    }
}
