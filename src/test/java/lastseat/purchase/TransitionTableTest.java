package lastseat.purchase;

import lastseat.checks.Quote;
import lastseat.db.Sql;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.Hold;
import lastseat.inventory.Order;
import lastseat.support.InProcess;
import lastseat.support.Invariants;
import lastseat.work.Timeline;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.math.BigDecimal;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The purchase state machine walked through the calls that move it. Every row of {@link Transition}:
 * from its own state it moves once, with exactly what its columns say — seats, tickets, the refund and
 * the email in the outbox, the reconciler's schedule, the payment token, whether the Idempotency-Key may
 * go — and tried again it is refused as a value ({@link Purchases.Moved.Refused} naming the state found)
 * and changes nothing; tried on a purchase in any other state, the same. Every pair of states the table
 * has no row for, asked for by every call that can ask for it, is refused as a value
 * ({@link Purchases.Moved.NotAllowed}, or Refused where the call names its row) and changes nothing.
 * {@code docs/DESIGN.md} shows the table as the code has it. Fast tier: the service's own
 * {@link Purchases} on H2 in memory, a test clock.
 */
@Tag("fast")
class TransitionTableTest {
    private static final InProcess app = InProcess.start();
    private static final String CLIENT = "demo-shop";

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
        assertThat(Arrays.stream(PurchaseState.values()).filter(s -> Arrays.stream(Transition.values()).noneMatch(t -> t.from() == s)))
                .as("the terminal states are those no move leaves").containsExactlyInAnyOrderElementsOf(
                        Arrays.stream(PurchaseState.values()).filter(PurchaseState::terminal).toList());
        assertThat(Arrays.stream(Transition.values()).filter(t -> t.to() == PurchaseState.HELD)).as("only a reservation makes HELD")
                .isEmpty();
        assertThat(Arrays.stream(Transition.values()).filter(t -> t.from().paymentOpen() || t.from() == PurchaseState.PAYING)
                           .filter(t -> t.to() == PurchaseState.EXPIRED)).as("a payment that may have left is never expired").isEmpty();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(Transition.class)
    void aRowsColumnsAgreeWithEachOtherAndWithTheMoneyRule(Transition row) {
        boolean sells = row.seats() == Transition.Seats.SELL;
        boolean refunds = row.refund() == Transition.Refund.QUEUE;

        assertThat(row.tickets() == Transition.Tickets.ISSUE).as("tickets exactly when seats are sold").isEqualTo(sells);
        assertThat(row.email() == Transition.Email.CONFIRMATION).as("a confirmation exactly with the tickets").isEqualTo(sells);
        assertThat(row.email() == Transition.Email.REFUND_NOTICE).as("a refund notice exactly with a refund").isEqualTo(refunds);
        assertThat(sells).as("a sale ends CONFIRMED").isEqualTo(row.to() == PurchaseState.CONFIRMED);
        assertThat(refunds).as("a refund ends REFUNDED").isEqualTo(row.to() == PurchaseState.REFUNDED);
        assertThat(row.check() == Transition.Check.SCHEDULE).as("asked about once a payment becomes open, not again after")
                .isEqualTo(row.to().paymentOpen() && !row.from().paymentOpen());
        assertThat(row.token() == Transition.Token.DROP).as("the token goes exactly with a terminal state").isEqualTo(row.to().terminal());
        if (row.key() == Transition.Key.MAY_LET_GO) {
            assertThat(row.to().terminal()).as("a key goes only once its purchase has ended").isTrue();
            assertThat(row.seats()).as("and gave its seats back").isEqualTo(Transition.Seats.GIVE_BACK);
            assertThat(refunds || row.to() == PurchaseState.CONFIRMED).as("and took no money").isFalse();
        }
        assertThat(Arrays.stream(Transition.values()).filter(t -> t.to() == row.to()).map(Transition::key).distinct())
                .as("every move into %s says the same of the key: the key rule is the state's", row.to()).containsExactly(row.key());
    }

    @Test
    void theKeyRuleOfEveryStateIsReadFromTheTable() {
        Set<PurchaseState> leaveNothing = EnumSet.noneOf(PurchaseState.class);
        Arrays.stream(PurchaseState.values()).filter(PurchaseState::leavesNothing).forEach(leaveNothing::add);

        assertThat(leaveNothing).containsExactlyInAnyOrder(PurchaseState.RELEASED, PurchaseState.EXPIRED);
        assertThat(leaveNothing).isEqualTo(Arrays.stream(Transition.values()).filter(t -> t.key() == Transition.Key.MAY_LET_GO)
                                                   .map(Transition::to).collect(Collectors.toSet()));
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(Transition.class)
    void aRowMovesFromItsOwnStateOnceWithExactlyWhatItsColumnsSay(Transition row) {
        String event = app.newEvent("A1");
        String key = UUID.randomUUID().toString();
        String token = ((IdempotencyKeys.Claim.Fresh) app.keys.claim(CLIENT, key, "body")).token();
        String id = purchaseIn(event, row.from(), row == Transition.EXPIRE_HOLD, key);
        Snapshot before = Snapshot.of(id);
        Instant now = app.clock.instant();

        Purchases.Moved first = attempt(row, row.from(), id);

        assertThat(first).isInstanceOfSatisfying(Purchases.Moved.Done.class, done -> {
            assertThat(done.to()).isEqualTo(row.to());
            assertThat(done.tickets()).hasSize(row.tickets() == Transition.Tickets.ISSUE ? 1 : 0);
        });
        Snapshot after = Snapshot.of(id);
        assertThat(after.state()).isEqualTo(row.to().name());
        assertThat(after.seat()).as("seats after %s", row).isEqualTo(switch (row.seats()) {
            case KEEP -> "HELD";
            case SELL -> "SOLD";
            case GIVE_BACK -> "AVAILABLE";
        });
        assertThat(after.tickets()).as("tickets after %s", row).isEqualTo(switch (row.tickets()) {
            case NONE -> 0;
            case ISSUE -> 1;
        });
        List<String> outbox = new ArrayList<>();
        if (row.refund() == Transition.Refund.QUEUE) {
            outbox.add(Purchases.REFUND);
        }
        switch (row.email()) {
            case NONE -> {
            }
            case CONFIRMATION -> outbox.add(Purchases.CONFIRMATION_EMAIL);
            case REFUND_NOTICE -> outbox.add(Purchases.REFUND_EMAIL);
        }
        assertThat(after.outbox()).as("outbox rows after %s, each once", row).containsExactlyInAnyOrderElementsOf(outbox);
        assertThat(payload(id, Purchases.REFUND)).allSatisfy(refund -> assertThat(refund).contains("pay_test"));
        assertThat(payload(id, Purchases.CONFIRMATION_EMAIL)).allSatisfy(email -> assertThat(email).contains(
                ((Purchases.Moved.Done) first).tickets().stream().map(PurchaseView.Ticket::id).toList()));
        assertThat(payload(id, Purchases.REFUND_EMAIL)).allSatisfy(email -> assertThat(email).contains("a test"));
        assertThat(after.check()).as("the reconciler's schedule after %s", row).isEqualTo(switch (row.check()) {
            case NONE -> before.check();
            case SCHEDULE -> new Schedule(now, now.plus(app.config.reconcile().settleTime()), 0);
        });
        assertThat(after.token()).as("payment token after %s", row).isEqualTo(switch (row.token()) {
            case KEEP -> "tok_ok";
            case DROP -> null;
        });

        Purchases.Moved again = attempt(row, row.from(), id);

        assertThat(again).as("a second %s", row).isInstanceOfSatisfying(Purchases.Moved.Refused.class, refused -> {
            assertThat(refused.tried()).isEqualTo(row);
            assertThat(refused.actual()).contains(row.to());
        });
        assertThat(Snapshot.of(id)).as("a refused move changes nothing").isEqualTo(after);
        assertThat(app.keys.forget(CLIENT, key, token)).as("the purchase's key after %s", row).isEqualTo(switch (row.key()) {
            case KEEP -> IdempotencyKeys.Ending.KEPT;
            case MAY_LET_GO -> IdempotencyKeys.Ending.LET_GO;
        });
        Invariants.seatsAreConsistent(app.db, event);
    }

    static Stream<Arguments> everyRowOnEveryOtherState() {
        return Arrays.stream(Transition.values())
                .flatMap(row -> Arrays.stream(PurchaseState.values()).filter(state -> state != row.from()).map(state -> Arguments.of(row, state)));
    }

    @ParameterizedTest(name = "{0} tried on {1}")
    @MethodSource("everyRowOnEveryOtherState")
    void aRowTriedOnAPurchaseInAnotherStateIsRefusedNamingThatStateAndChangesNothing(Transition row, PurchaseState state) {
        String event = app.newEvent("A1");
        String id = purchaseIn(event, state, row == Transition.EXPIRE_HOLD, UUID.randomUUID().toString());
        Snapshot before = Snapshot.of(id);

        Purchases.Moved moved = attempt(row, row.from(), id);

        assertThat(moved).isInstanceOfSatisfying(Purchases.Moved.Refused.class, refused -> {
            assertThat(refused.tried()).isEqualTo(row);
            assertThat(refused.actual()).contains(state);
        });
        assertThat(Snapshot.of(id)).as("a refused move changes nothing").isEqualTo(before);
        Invariants.seatsAreConsistent(app.db, event);
    }

    /** Every pair of states the table has no row for; none leads to HELD, which only a reservation makes. */
    static Stream<Arguments> everyPairNotInTheTable() {
        return Arrays.stream(PurchaseState.values())
                .flatMap(from -> Arrays.stream(PurchaseState.values()).filter(to -> to != PurchaseState.HELD)
                        .filter(to -> Transition.between(from, to).isEmpty()).map(to -> Arguments.of(from, to)));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("everyPairNotInTheTable")
    void aPairTheTableDoesNotHaveIsRefusedAsAValueByEveryCallThatCanAskForItAndChangesNothing(PurchaseState from, PurchaseState to) {
        List<Transition> named = Arrays.stream(Transition.values()).filter(row -> row.to() == to && !takesFrom(row)).toList();
        List<Transition> byFrom = Arrays.stream(Transition.values()).filter(row -> row.to() == to && takesFrom(row)).limit(1).toList();
        assertThat(named.size() + byFrom.size()).as("some call asks for %s", to).isPositive();

        for (Transition call : named) {
            String event = app.newEvent("A1");
            String id = purchaseIn(event, from, false, UUID.randomUUID().toString());
            Snapshot before = Snapshot.of(id);

            Purchases.Moved moved = attempt(call, from, id);

            assertThat(moved).as("%s on a purchase in %s", call, from).isInstanceOfSatisfying(Purchases.Moved.Refused.class,
                    refused -> assertThat(refused.actual()).contains(from));
            assertThat(Snapshot.of(id)).isEqualTo(before);
            Invariants.seatsAreConsistent(app.db, event);
        }
        for (Transition call : byFrom) {
            String event = app.newEvent("A1");
            String id = purchaseIn(event, from, false, UUID.randomUUID().toString());
            Snapshot before = Snapshot.of(id);

            Purchases.Moved moved = attempt(call, from, id);

            assertThat(moved).as("asked %s -> %s", from, to).isEqualTo(new Purchases.Moved.NotAllowed(id, from, to));
            assertThat(Snapshot.of(id)).isEqualTo(before);
            Invariants.seatsAreConsistent(app.db, event);
        }
    }

    @Test
    void aSaleWhoseSeatsAreGoneIsRefusedAsSeatsGoneAndChangesNothing() {
        String event = app.newEvent("A1");
        String id = purchaseIn(event, PurchaseState.PAYING, false, UUID.randomUUID().toString());
        app.database.inTransaction(c -> Sql.update(c, "UPDATE seats SET state = 'AVAILABLE', purchase_id = NULL WHERE purchase_id = ?", id));
        Snapshot before = Snapshot.of(id);

        Purchases.Moved moved = attempt(Transition.CONFIRM, PurchaseState.PAYING, id);

        assertThat(moved).isEqualTo(new Purchases.Moved.SeatsGone(id));
        assertThat(Snapshot.of(id)).isEqualTo(before);
    }

    @Test
    void theDesignDocShowsTheTableAsTheCodeHasIt() throws IOException, URISyntaxException {
        Path classes = Path.of(TransitionTableTest.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path design = Stream.iterate(classes, dir -> dir != null, Path::getParent).map(dir -> dir.resolve("docs/DESIGN.md"))
                .filter(Files::isRegularFile).findFirst().orElseThrow();

        assertThat(Files.readString(design)).as("docs/DESIGN.md holds Transition.markdown() as it is; paste it there")
                .contains(Transition.markdown());
    }

    /** When the reconciler first asks about the purchase, when next, and how often it asked. */
    private record Schedule(Instant unknownSince, Instant nextCheckAt, int attempts) {
    }

    /** What a move may change about one purchase. */
    private record Snapshot(String state, String seat, long tickets, List<String> outbox, String token, Schedule check) {
        static Snapshot of(String id) {
            return new Snapshot(app.db.purchaseState(id),
                                app.db.strings("SELECT s.state FROM seats s JOIN purchase_seats ps ON ps.event_id = s.event_id "
                                                 + "AND ps.label = s.label WHERE ps.purchase_id = ?", id).getFirst(),
                                app.db.count("SELECT COUNT(*) FROM tickets WHERE purchase_id = ?", id),
                                app.db.strings("SELECT kind FROM outbox WHERE purchase_id = ? ORDER BY kind", id),
                                app.db.strings("SELECT payment_token FROM purchases WHERE id = ?", id).getFirst(),
                                app.database.read(c -> Sql.list(c, "SELECT unknown_since, next_check_at, check_attempts FROM purchases "
                                                                   + "WHERE id = ?",
                                                                rs -> new Schedule(Sql.instant(rs, 1), Sql.instant(rs, 2), rs.getInt(3)), id)
                                        .getFirst()));
        }
    }

    private static List<String> payload(String id, String kind) {
        return app.db.strings("SELECT payload FROM outbox WHERE purchase_id = ? AND kind = ?", id, kind);
    }

    /**
     * A purchase of the one seat of {@code event}, made with {@code key} and put in {@code state} with
     * its seat where that state has it; an open payment has been asked about before (three times, an
     * hour ago), so that a move that leaves the schedule alone shows it.
     */
    private static String purchaseIn(String event, PurchaseState state, boolean holdExpired, String key) {
        Hold hold = ((Purchases.Reservation.Held) app.purchases.reserve(new Order(event, List.of("A1"), 1, "ada",
                "ada@example.com", "tok_ok", CLIENT, key))).hold();
        String seat = state.terminal() ? (state == PurchaseState.CONFIRMED ? "SOLD" : "AVAILABLE") : "HELD";
        Instant now = app.clock.instant();
        app.database.inTransaction(c -> {
            Sql.update(c, "UPDATE purchases SET state = ?, hold_expires_at = ? WHERE id = ?", state.name(),
                       now.plusSeconds(holdExpired ? -60 : 60), hold.purchaseId());
            if (state.paymentOpen()) {
                Sql.update(c, "UPDATE purchases SET unknown_since = ?, next_check_at = ?, check_attempts = 3 WHERE id = ?",
                           now.minus(Duration.ofHours(1)), now.minusSeconds(1), hold.purchaseId());
            }
            if (state == PurchaseState.CONFIRMED) {
                Sql.update(c, "INSERT INTO tickets (id, purchase_id, event_id, label, issued_at) VALUES (?, ?, ?, 'A1', ?)",
                           UUID.randomUUID().toString(), hold.purchaseId(), event, now);
            }
            return Sql.update(c, "UPDATE seats SET state = ?, purchase_id = " + ("AVAILABLE".equals(seat) ? "NULL" : "purchase_id")
                                 + " WHERE purchase_id = ?", seat, hold.purchaseId());
        });
        return hold.purchaseId();
    }

    /** Whether the call that makes {@code row} is told the state to move from (else it names its row). */
    private static boolean takesFrom(Transition row) {
        return switch (row.to()) {
            case CONFIRMED, REFUNDED, RELEASED -> true;
            case HELD, PAYING, EXPIRED, PAYMENT_UNKNOWN, PAYMENT_UNRESOLVED -> false;
        };
    }

    /** The call that makes {@code row}, asked to move from {@code from} where it takes a state to move from. */
    private static Purchases.Moved attempt(Transition row, PurchaseState from, String id) {
        Purchases purchases = app.purchases;
        Timeline timeline = new Timeline(app.clock);
        return switch (row.to()) {
            case PAYING -> purchases.startPayment(new Hold(id, null, List.of(), BigDecimal.ONE, "EUR", null, null, null, null),
                                                  new Quote(BigDecimal.ONE, "EUR"));
            case EXPIRED -> purchases.expire(id);
            case CONFIRMED -> purchases.confirm(id, from, "pay_test", timeline, timeline.start("confirm"));
            case REFUNDED -> purchases.refund(id, from, "pay_test", "a test", timeline, timeline.start("refund"));
            case RELEASED -> purchases.release(id, from, "a test", timeline, -1);
            case PAYMENT_UNKNOWN -> purchases.loseAnswer(id, "a test", timeline);
            case PAYMENT_UNRESOLVED -> purchases.giveUp(id, "a test");
            case HELD -> throw new IllegalArgumentException("no row leads to HELD");
        };
    }
}
