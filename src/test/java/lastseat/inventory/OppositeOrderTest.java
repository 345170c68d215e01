package lastseat.inventory;

import lastseat.db.Database;
import lastseat.db.DatabaseException;
import lastseat.purchase.PurchaseOutcome;
import lastseat.purchase.Purchases;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Together;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Predicate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two buyers want the same two adjacent seats, one asking for A1, A2 and the other for A2, A1, released
 * together. {@link lastseat.purchase.Purchases#reserve} (through {@link Inventory#claim}) claims named seats in one transaction in seat-position order, so
 * the second buyer waits behind the first and is told which seats are gone; it never deadlocks, never
 * waits out the lock timeout and never leaves either buyer holding half.
 *
 * <p>The unsafe counterparts claim the same way (the same conditional {@code UPDATE}) but in the order
 * the buyer asked. The two buyers meet at a barrier after each has claimed its first seat, so the bad
 * interleaving happens every time instead of by luck: in one transaction they deadlock (or wait out
 * the lock timeout), and in one transaction per seat each is left holding one seat. The lock timeout is
 * short here so the unsafe rounds end quickly, which also makes the safe rounds stricter.
 */
class OppositeOrderTest {
    private static final int ROUNDS = 200;
    private static final int UNSAFE_ROUNDS = 5;
    private static final long MEETING_SECONDS = 2;
    private static final List<String> BOTH = List.of("A1", "A2");
    private static final List<List<String>> ASKS = List.of(BOTH, List.of("A2", "A1"));
    private static final String CLAIM = "UPDATE seats SET state = 'HELD', purchase_id = ? "
                                        + "WHERE event_id = ? AND label = ? AND state = 'AVAILABLE'";
    /** Chosen as deadlock victim (H2 40001, PostgreSQL 40P01) or gave up waiting for a row (H2 HYT00, PostgreSQL 55P03). */
    private static final List<String> LOCK_TROUBLE = List.of("40001", "40P01", "HYT00", "55P03");

    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("db.lock-timeout", "500ms"));

    @Test
    void claimingInRequestOrderInOneTransactionDeadlocksWhenTwoBuyersAskInOppositeOrder() {
        List<String> events = new ArrayList<>();

        List<Outcome> outcomes = firstFailingRound(events, event -> {
            CyclicBarrier firstSeatsClaimed = new CyclicBarrier(2);
            return Together.run(2, buyer -> attempt(ASKS.get(buyer), purchaseId -> new Got(purchaseId,
                    claimInRequestOrderInOneTransaction(event, ASKS.get(buyer), purchaseId, firstSeatsClaimed))));
        }, round -> round.stream().anyMatch(o -> o.failure() != null));

        assertThat(outcomes.stream().map(Outcome::failure).filter(f -> f != null).toList())
                .as("request order in one transaction: %s", outcomes)
                .isNotEmpty()
                .allSatisfy(failure -> assertThat(failure)
                        .isInstanceOf(DatabaseException.class)
                        .cause().isInstanceOf(SQLException.class)
                        .satisfies(cause -> assertThat(((SQLException) cause).getSQLState())
                                .as("a deadlock or a lock wait that timed out: %s", cause.getMessage())
                                .isIn(LOCK_TROUBLE)));
        assertThat(heldBy(event(events)).size()).as("all or nothing even so").isIn(0, 2);
        Invariants.seatsAreConsistent(app, event(events));
        Invariants.resourcesCameBack(app);
    }

    @Test
    void claimingInRequestOrderOneSeatAtATimeLeavesEachOfTwoBuyersHoldingHalf() {
        List<String> events = new ArrayList<>();

        List<Outcome> outcomes = firstFailingRound(events, event -> {
            CyclicBarrier firstSeatsClaimed = new CyclicBarrier(2);
            return Together.run(2, buyer -> attempt(ASKS.get(buyer), purchaseId -> new Got(purchaseId,
                    claimInRequestOrderOneSeatAtATime(event, ASKS.get(buyer), purchaseId, firstSeatsClaimed))));
        }, round -> round.stream().allMatch(o -> o.got().size() == 1));

        assertThat(outcomes).as("request order, one seat at a time").allSatisfy(o -> {
            assertThat(o.failure()).isNull();
            assertThat(o.got()).as("a partial hold: only the seat asked for first").containsExactly(o.asked().getFirst());
        });
        assertThat(heldBy(event(events))).as("each seat held by a different buyer, so nobody has both")
                .containsOnlyKeys(BOTH)
                .containsEntry("A1", outcomes.get(0).purchaseId())
                .containsEntry("A2", outcomes.get(1).purchaseId());
        Invariants.seatsAreConsistent(app, event(events));
        Invariants.resourcesCameBack(app);
    }

    @Test
    void everyOneOfTwoHundredOppositeOrderRoundsEndsWithOneBuyerHoldingBothSeatsAndTheOtherTold409() {
        List<String> events = new ArrayList<>();
        int together = 0;

        for (int round = 0; round < ROUNDS; round++) {
            String event = app.newEvent("A1", "A2");
            events.add(event);

            List<Outcome> outcomes = Together.run(2, buyer -> attempt(ASKS.get(buyer), unused ->
                    switch (app.services().purchases().reserve(order(event, ASKS.get(buyer)))) {
                        case Purchases.Reservation.Held held -> new Got(held.hold().purchaseId(), held.hold().seats());
                        case Purchases.Reservation.Refused refused -> throw new Refused(refused.why());
                    }));

            List<Outcome> winners = outcomes.stream().filter(o -> o.failure() == null).toList();
            assertThat(winners).as("round %d: exactly one buyer gets the seats: %s", round, outcomes).hasSize(1);
            Outcome winner = winners.getFirst();
            Outcome loser = outcomes.get(1 - outcomes.indexOf(winner));
            together += winner.ranAlongside(loser) ? 1 : 0;
            assertThat(winner.got()).as("round %d: the winner has both seats, in seat order", round).isEqualTo(BOTH);
            assertThat(loser.failure()).as("round %d: the loser is told which seats are gone: %s", round, outcomes)
                    .isInstanceOfSatisfying(Refused.class, refused ->
                            assertThat(refused.why()).isEqualTo(new PurchaseOutcome.Refusal.SeatsTaken(BOTH)));
            assertThat(heldBy(event)).as("round %d: both seats held by the winner's purchase, none by the loser", round)
                    .isEqualTo(Map.of("A1", winner.purchaseId(), "A2", winner.purchaseId()));
            assertThat(app.db().strings("SELECT id || ' ' || state FROM purchases WHERE event_id = ?", event))
                    .as("round %d: the winner's purchase is the only one written", round)
                    .containsExactly(winner.purchaseId() + " HELD");
        }

        assertThat(together).as("rounds in which both reserves ran at once (none: the race never happened, this proves nothing)")
                .isPositive();
        events.forEach(event -> Invariants.seatsAreConsistent(app, event));
        Invariants.resourcesCameBack(app);
    }

    /** The seats one attempt claimed, under the purchase id that holds them. */
    private record Got(String purchaseId, List<String> seats) {
    }

    /** What one buyer asked for and got: its seats, or the exception that ended its attempt. */
    /** The reservation's refusal, carried out of a contender as its failure. */
    private static final class Refused extends RuntimeException {
        private final PurchaseOutcome.Refusal why;

        Refused(PurchaseOutcome.Refusal why) {
            super(why.toString(), null, false, false);
            this.why = why;
        }

        PurchaseOutcome.Refusal why() {
            return why;
        }
    }

    private record Outcome(List<String> asked, String purchaseId, List<String> got, RuntimeException failure,
                           long startedNanos, long endedNanos) {
        boolean ranAlongside(Outcome other) {
            return startedNanos < other.endedNanos && other.startedNanos < endedNanos;
        }
    }

    /** {@code claim} is given a fresh purchase id (the unsafe claims use it; reserve makes its own). */
    private static Outcome attempt(List<String> asked, Function<String, Got> claim) {
        String purchaseId = UUID.randomUUID().toString();
        long started = System.nanoTime();
        try {
            Got got = claim.apply(purchaseId);
            return new Outcome(asked, got.purchaseId(), got.seats(), null, started, System.nanoTime());
        } catch (RuntimeException e) {
            return new Outcome(asked, purchaseId, List.of(), e, started, System.nanoTime());
        }
    }

    /** Runs rounds on fresh events until one shows the failure, at most {@link #UNSAFE_ROUNDS}. */
    private static List<Outcome> firstFailingRound(List<String> events, Function<String, List<Outcome>> round,
                                                   Predicate<List<Outcome>> failed) {
        List<Outcome> outcomes;
        do {
            events.add(app.newEvent("A1", "A2"));
            outcomes = round.apply(event(events));
        } while (!failed.test(outcomes) && events.size() < UNSAFE_ROUNDS);
        return outcomes;
    }

    private static String event(List<String> events) {
        return events.getLast();
    }

    private static Order order(String event, List<String> seats) {
        String buyer = "buyer-" + UUID.randomUUID();
        return new Order(event, seats, seats.size(), buyer, buyer + "@example.com", "tok_ok", "demo-shop", UUID.randomUUID().toString());
    }

    /** UNSAFE: the same claim as {@link Inventory#claim}, in one transaction, but in the order asked. */
    private static List<String> claimInRequestOrderInOneTransaction(String event, List<String> seats, String purchaseId,
                                                                    CyclicBarrier firstSeatsClaimed) {
        Database db = app.services().db();
        return db.inTransaction(c -> {
            for (int i = 0; i < seats.size(); i++) {
                if (!claimOne(c, event, seats.get(i), purchaseId)) {
                    c.rollback();
                    return List.of();
                }
                if (i == 0) {
                    meet(firstSeatsClaimed);
                }
            }
            return seats;
        });
    }

    /** UNSAFE: the same claim, in the order asked, each seat in its own transaction. */
    private static List<String> claimInRequestOrderOneSeatAtATime(String event, List<String> seats, String purchaseId,
                                                                  CyclicBarrier firstSeatsClaimed) {
        Database db = app.services().db();
        List<String> got = new ArrayList<>();
        for (int i = 0; i < seats.size(); i++) {
            String seat = seats.get(i);
            if (db.inTransaction(c -> claimOne(c, event, seat, purchaseId))) {
                got.add(seat);
            }
            if (i == 0) {
                meet(firstSeatsClaimed);
            }
        }
        return got;
    }

    private static boolean claimOne(Connection c, String event, String seat, String purchaseId) throws SQLException {
        try (PreparedStatement claim = c.prepareStatement(CLAIM)) {
            claim.setString(1, purchaseId);
            claim.setString(2, event);
            claim.setString(3, seat);
            return claim.executeUpdate() == 1;
        }
    }

    /** Bounded: a buyer that never arrives breaks the barrier instead of hanging the test. */
    private static void meet(CyclicBarrier barrier) {
        try {
            barrier.await(MEETING_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted at the barrier", e);
        } catch (BrokenBarrierException | TimeoutException e) {
            throw new IllegalStateException("the other buyer did not claim its first seat within " + MEETING_SECONDS + " s", e);
        }
    }

    /** Seat label → purchase id, for the held seats of the event. */
    private static Map<String, String> heldBy(String event) {
        return app.services().db().read(c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT label, purchase_id FROM seats WHERE event_id = ? AND state = 'HELD' ORDER BY position")) {
                ps.setString(1, event);
                Map<String, String> held = new LinkedHashMap<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        held.put(rs.getString(1), rs.getString(2));
                    }
                }
                return held;
            }
        });
    }
}
