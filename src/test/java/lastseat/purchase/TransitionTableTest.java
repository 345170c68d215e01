package lastseat.purchase;

import lastseat.checks.Quote;
import lastseat.db.Sql;
import lastseat.inventory.Hold;
import lastseat.inventory.Order;
import lastseat.support.Invariants;
import lastseat.support.InProcess;
import lastseat.work.Timeline;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.math.BigDecimal;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The purchase state machine walked row by row: every row of {@link Transition} tried on a purchase
 * in every state. From the row's own state it moves once, with exactly the row's effects on seats,
 * tickets, the outbox and the payment token (dropped on a move to a terminal state, kept otherwise);
 * tried again, or from any other state, it is refused as a value
 * ({@link Purchases.Moved.Refused} naming the state found) and changes nothing. Moves the table does
 * not have cannot be asked for at all. Fast tier: the service's own {@link Purchases} on H2 in memory.
 */
@Tag("fast")
class TransitionTableTest {
    private static final InProcess app = InProcess.start();

    @AfterAll
    static void close() {
        app.close();
    }

    @Test
    void theTableHasTheMovesOfTheDesignAndNoOthers() {
        Set<String> moves = Arrays.stream(Transition.values()).map(t -> t.from() + " -> " + t.to()).collect(Collectors.toSet());

        assertThat(moves).containsExactlyInAnyOrder(
                "HELD -> PAYING", "HELD -> RELEASED", "HELD -> EXPIRED",
                "PAYING -> CONFIRMED", "PAYING -> RELEASED", "PAYING -> PAYMENT_UNKNOWN", "PAYING -> REFUNDED",
                "PAYMENT_UNKNOWN -> CONFIRMED", "PAYMENT_UNKNOWN -> RELEASED", "PAYMENT_UNKNOWN -> REFUNDED",
                "PAYMENT_UNKNOWN -> PAYMENT_UNRESOLVED",
                "PAYMENT_UNRESOLVED -> CONFIRMED", "PAYMENT_UNRESOLVED -> RELEASED", "PAYMENT_UNRESOLVED -> REFUNDED");
        assertThat(Arrays.stream(Transition.values()).filter(t -> t.from().terminal())).as("nothing leaves a terminal state").isEmpty();
        assertThat(Arrays.stream(Transition.values()).filter(t -> t.from().paymentOpen() || t.from() == PurchaseState.PAYING)
                           .filter(t -> t.to() == PurchaseState.EXPIRED)).as("a payment that may have left is never expired").isEmpty();
    }

    static Stream<Arguments> everyRowFromEveryState() {
        return Arrays.stream(Transition.values())
                .flatMap(row -> Arrays.stream(PurchaseState.values()).map(state -> Arguments.of(row, state)));
    }

    @ParameterizedTest(name = "{0} tried on {1}")
    @MethodSource("everyRowFromEveryState")
    void aRowMovesOnlyFromItsOwnStateAndOnlyOnce(Transition row, PurchaseState state) {
        String event = app.newEvent("A1");
        String id = purchaseIn(event, state, row == Transition.EXPIRE_HOLD);
        Snapshot before = Snapshot.of(id);

        Purchases.Moved first = attempt(row, id);

        if (state == row.from()) {
            assertThat(first).isEqualTo(new Purchases.Moved.Done(row.to(), ((Purchases.Moved.Done) first).tickets()));
            Snapshot after = Snapshot.of(id);
            assertThat(after.state()).isEqualTo(row.to().name());
            assertThat(after.seat()).as("seats after %s", row).isEqualTo(switch (row.seats()) {
                case KEEP -> "HELD";
                case SELL -> "SOLD";
                case GIVE_BACK -> "AVAILABLE";
            });
            assertThat(after.tickets()).isEqualTo(row.to() == PurchaseState.CONFIRMED ? 1 : 0);
            assertThat(after.token()).as("payment token after %s", row).isEqualTo(row.to().terminal() ? null : "tok_ok");
            assertThat(after.outbox()).isEqualTo(switch (row.to()) {
                case CONFIRMED -> List.of("confirmation-email");
                case REFUNDED -> List.of("refund", "refund-email");
                default -> List.of();
            });
            Purchases.Moved again = attempt(row, id);
            assertThat(again).as("a second %s", row).isInstanceOfSatisfying(Purchases.Moved.Refused.class,
                    refused -> assertThat(refused.actual()).contains(row.to()));
            assertThat(Snapshot.of(id)).as("a refused move changes nothing").isEqualTo(after);
        } else {
            assertThat(first).isInstanceOfSatisfying(Purchases.Moved.Refused.class, refused -> {
                assertThat(refused.tried()).isEqualTo(row);
                assertThat(refused.actual()).contains(state);
            });
            assertThat(Snapshot.of(id)).as("a refused move changes nothing").isEqualTo(before);
        }
        Invariants.seatsAreConsistent(app.db, event);
    }

    @Test
    void aSaleWhoseSeatsAreGoneIsRefusedAsSeatsGoneAndChangesNothing() {
        String event = app.newEvent("A1");
        String id = purchaseIn(event, PurchaseState.PAYING, false);
        app.database.read(c -> Sql.update(c, "UPDATE seats SET state = 'AVAILABLE', purchase_id = NULL WHERE purchase_id = ?", id));
        Snapshot before = Snapshot.of(id);

        Purchases.Moved moved = attempt(Transition.CONFIRM, id);

        assertThat(moved).isEqualTo(new Purchases.Moved.SeatsGone(id));
        assertThat(Snapshot.of(id)).isEqualTo(before);
    }

    /** What a move may change about one purchase. */
    private record Snapshot(String state, String seat, long tickets, List<String> outbox, String token) {
        static Snapshot of(String id) {
            return new Snapshot(app.db.purchaseState(id),
                                app.db.strings("SELECT s.state FROM seats s JOIN purchase_seats ps ON ps.event_id = s.event_id "
                                                 + "AND ps.label = s.label WHERE ps.purchase_id = ?", id).getFirst(),
                                app.db.count("SELECT COUNT(*) FROM tickets WHERE purchase_id = ?", id),
                                app.db.strings("SELECT kind FROM outbox WHERE purchase_id = ? ORDER BY kind", id),
                                app.db.strings("SELECT payment_token FROM purchases WHERE id = ?", id).getFirst());
        }
    }

    /** A purchase of the one seat of {@code event}, put in {@code state} with its seat where that state has it. */
    private static String purchaseIn(String event, PurchaseState state, boolean holdExpired) {
        Hold hold = ((Purchases.Reservation.Held) app.purchases.reserve(new Order(event, List.of("A1"), 1, "ada",
                "ada@example.com", "tok_ok", "demo-shop", UUID.randomUUID().toString()))).hold();
        String seat = state.terminal() ? (state == PurchaseState.CONFIRMED ? "SOLD" : "AVAILABLE") : "HELD";
        app.database.inTransaction(c -> {
            Sql.update(c, "UPDATE purchases SET state = ?, hold_expires_at = ? WHERE id = ?", state.name(),
                       app.clock.instant().plusSeconds(holdExpired ? -60 : 60), hold.purchaseId());
            if (state == PurchaseState.CONFIRMED) {
                Sql.update(c, "INSERT INTO tickets (id, purchase_id, event_id, label, issued_at) VALUES (?, ?, ?, 'A1', ?)",
                           UUID.randomUUID().toString(), hold.purchaseId(), event, app.clock.instant());
            }
            return Sql.update(c, "UPDATE seats SET state = ?, purchase_id = " + ("AVAILABLE".equals(seat) ? "NULL" : "purchase_id")
                                 + " WHERE purchase_id = ?", seat, hold.purchaseId());
        });
        return hold.purchaseId();
    }

    /** The row, asked for through the one call that makes it. */
    private static Purchases.Moved attempt(Transition row, String id) {
        Purchases purchases = app.purchases;
        Timeline timeline = new Timeline(app.clock);
        return switch (row.to()) {
            case PAYING -> purchases.startPayment(new Hold(id, null, List.of(), BigDecimal.ONE, "EUR", null, null, null, null),
                                                  new Quote(BigDecimal.ONE, "EUR"));
            case EXPIRED -> purchases.expire(id);
            case CONFIRMED -> purchases.confirm(id, row.from(), "pay_test", timeline, timeline.start("confirm"));
            case REFUNDED -> purchases.refund(id, row.from(), "pay_test", "a test", timeline, timeline.start("refund"));
            case RELEASED -> purchases.release(id, row.from(), "a test", timeline, -1);
            case PAYMENT_UNKNOWN -> purchases.loseAnswer(id, "a test", timeline);
            case PAYMENT_UNRESOLVED -> purchases.giveUp(id, "a test");
            case HELD -> throw new IllegalArgumentException("no row leads to HELD");
        };
    }
}
