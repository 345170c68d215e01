package lastseat.purchase;

import lastseat.db.Database;
import lastseat.db.Sql;
import lastseat.inventory.Inventory;
import lastseat.inventory.Order;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.FreshPostgres;
import lastseat.work.Deadline;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * On PostgreSQL a quantity buyer takes the first free seats no other claim has locked, without waiting
 * for those that are ({@code FOR UPDATE SKIP LOCKED}): at a last-seat burst, claims of seats read as
 * free used to queue on each other's row locks, each holding a pooled connection. The unsafe
 * counterpart, the plain read of the first free seat and its guarded claim, waits on the locked row
 * until the lock timeout every time. A seat skipped because another claim held it is still sold when
 * that claim lets it go: the buyer then waits for it, as the truth needs. Skipped, loudly, when
 * PostgreSQL is not reachable — unless {@code LASTSEAT_REQUIRE_POSTGRES=1}, then it fails.
 */
class LockedSeatsTest {
    @RegisterExtension
    @org.junit.jupiter.api.Order(1)
    static final FreshPostgres database = new FreshPostgres("lastseat_locked_");

    @RegisterExtension
    @org.junit.jupiter.api.Order(2)
    // Long, so that a buyer that waits behind a lock on a busy machine gets the seat when the holder lets go.
    static final LastseatApp app = LastseatApp.with(database.settings("db.lock-timeout", "10s"));

    /** How long the unsafe claim waits before it gives up (its own transaction's bound). */
    private static final Duration UNSAFE_WAIT = Duration.ofSeconds(1);
    /** A buyer that waited on the locked row would wait out its 5 s deadline: well under that is no wait. */
    private static final Duration NO_WAIT = Duration.ofMillis(2500);

    @Test
    void aBuyerTakesTheNextFreeSeatsAtOnceWhileAnotherClaimHoldsTheFirstOnesLock() throws Exception {
        String event = app.newEvent(4);
        CountDownLatch locked = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Boolean> holder = threads.submit(() -> lockSeat(event, "1", locked, letGo));
            try {
                assertThat(locked.await(5, TimeUnit.SECONDS)).isTrue();

                // Unsafe: the first free seat as read, then its guarded claim, waits on the lock until it gives up.
                assertThatThrownBy(() -> db().inTransaction(c -> {
                    Sql.update(c, "SET LOCAL lock_timeout = " + UNSAFE_WAIT.toMillis());
                    String first = Sql.list(c, "SELECT label FROM seats WHERE event_id = ? AND state = 'AVAILABLE' "
                                               + "ORDER BY position FETCH FIRST 1 ROWS ONLY", rs -> rs.getString(1), event).getFirst();
                    return Sql.update(c, Inventory.SEAT_CLAIM, UUID.randomUUID().toString(), event, first);
                })).hasRootCauseInstanceOf(SQLException.class)
                   .rootCause().extracting(e -> ((SQLException) e).getSQLState()).isEqualTo("55P03");

                long start = System.nanoTime();
                Purchases.Reservation reservation = purchases().reserve(quantity(event, 1), Deadline.after(Duration.ofSeconds(5), start));
                Duration took = Duration.ofNanos(System.nanoTime() - start);

                assertThat(reservation).isInstanceOf(Purchases.Reservation.Held.class);
                assertThat(((Purchases.Reservation.Held) reservation).hold().seats()).containsExactly("2");
                assertThat(took).as("no wait for the locked row").isLessThan(NO_WAIT);
                assertThat(seatStates(event)).containsExactly("AVAILABLE", "HELD", "AVAILABLE", "AVAILABLE");
                release(reservation);

                // Two seats: the next two unlocked ones, in order, at once (the savepoint released, not rolled back to).
                start = System.nanoTime();
                Purchases.Reservation two = purchases().reserve(quantity(event, 2), Deadline.after(Duration.ofSeconds(5), start));
                took = Duration.ofNanos(System.nanoTime() - start);
                assertThat(two).isInstanceOf(Purchases.Reservation.Held.class);
                assertThat(((Purchases.Reservation.Held) two).hold().seats()).containsExactly("2", "3");
                assertThat(took).as("no wait for the locked row").isLessThan(NO_WAIT);
                assertThat(seatStates(event)).containsExactly("AVAILABLE", "HELD", "HELD", "AVAILABLE");
                release(two);
            } finally {
                letGo.countDown();
            }
            assertThat(holder.get(5, TimeUnit.SECONDS)).isTrue();
        }
        Invariants.nothingHeld(app, event);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aSeatSkippedBecauseAnotherClaimHeldItIsSoldWhenThatClaimLetsItGo() throws Exception {
        String event = app.newEvent(1);

        // The buyer finds no unlocked seat and waits on the held one, as a claim that must know does.
        Purchases.Reservation reservation = reserveBehindLock(event, quantity(event, 1), () -> { });

        heldThenReleased(reservation, event, "1");
    }

    @Test
    void aBuyerOfTwoShortOfUnlockedSeatsLetsItsLockGoBeforeItWaitsInSeatOrder() throws Exception {
        String event = app.newEvent(2);

        Purchases.Reservation reservation = reserveBehindLock(event, quantity(event, 2), () -> {
            // Seat 2, which the buyer's first read locked, is free to lock now: it holds no row out of seat order while it waits.
            List<String> second = db().inTransaction(c -> Sql.list(c, "SELECT label FROM seats WHERE event_id = ? AND label = '2' "
                                                                      + "FOR UPDATE NOWAIT", rs -> rs.getString(1), event));
            assertThat(second).containsExactly("2");
        });

        heldThenReleased(reservation, event, "1", "2");
    }

    /** {@code reservation} holds exactly {@code seats}; released, nothing of the event is held and every resource is back. */
    private static void heldThenReleased(Purchases.Reservation reservation, String event, String... seats) {
        assertThat(reservation).isInstanceOf(Purchases.Reservation.Held.class);
        assertThat(((Purchases.Reservation.Held) reservation).hold().seats()).containsExactly(seats);
        release(reservation);
        Invariants.nothingHeld(app, event);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    /**
     * Reserves {@code order} while another transaction holds seat 1's row lock: once the buyer waits on
     * that row, {@code whileWaiting} runs, then the lock is let go, the seat unchanged; what the buyer got.
     */
    private static Purchases.Reservation reserveBehindLock(String event, Order order, Runnable whileWaiting) throws Exception {
        CountDownLatch locked = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Boolean> holder = threads.submit(() -> lockSeat(event, "1", locked, letGo));
            CompletableFuture<Purchases.Reservation> buyer;
            try {
                assertThat(locked.await(5, TimeUnit.SECONDS)).isTrue();
                buyer = CompletableFuture.supplyAsync(
                        () -> purchases().reserve(order, Deadline.after(Duration.ofSeconds(5), System.nanoTime())), threads);
                assertThat(waitingForALock(Duration.ofSeconds(5))).as("the buyer waits on seat 1's row").isTrue();
                whileWaiting.run();
            } finally {
                letGo.countDown();
            }
            assertThat(holder.get(5, TimeUnit.SECONDS)).isTrue();
            return buyer.get(5, TimeUnit.SECONDS);
        }
    }

    /** Locks the seat's row in a transaction of its own until {@code letGo}, then ends it having changed nothing. */
    private static boolean lockSeat(String event, String label, CountDownLatch locked, CountDownLatch letGo) {
        return db().inTransaction(c -> {
            Sql.list(c, "SELECT label FROM seats WHERE event_id = ? AND label = ? FOR UPDATE", rs -> rs.getString(1), event, label);
            locked.countDown();
            try {
                return letGo.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        });
    }

    /** True once some backend of this database waits for a lock, within {@code atMost}. */
    private static boolean waitingForALock(Duration atMost) throws InterruptedException {
        long until = System.nanoTime() + atMost.toNanos();
        while (System.nanoTime() < until) {
            long waiting = db().read(c -> Sql.list(c, "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "
                                                      + "AND wait_event_type = 'Lock'", rs -> rs.getLong(1)).getFirst());
            if (waiting > 0) {
                return true;
            }
            Thread.sleep(10);
        }
        return false;
    }

    private static void release(Purchases.Reservation reservation) {
        String id = ((Purchases.Reservation.Held) reservation).hold().purchaseId();
        assertThat(purchases().cancel(id, Optional.empty())).isInstanceOf(Purchases.Cancellation.Cancelled.class);
    }

    private static List<String> seatStates(String event) {
        return app.db().strings("SELECT state FROM seats WHERE event_id = ? ORDER BY position", event);
    }

    private static Order quantity(String event, int seats) {
        return new Order(event, null, seats, "ada", "ada@example.com", "tok_ok", "demo-shop", UUID.randomUUID().toString());
    }

    private static Database db() {
        return app.services().db();
    }

    private static Purchases purchases() {
        return app.services().purchases();
    }
}
