package lastseat.purchase;

import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static lastseat.purchase.PurchaseState.CONFIRMED;
import static lastseat.purchase.PurchaseState.EXPIRED;
import static lastseat.purchase.PurchaseState.HELD;
import static lastseat.purchase.PurchaseState.PAYING;
import static lastseat.purchase.PurchaseState.PAYMENT_UNKNOWN;
import static lastseat.purchase.PurchaseState.PAYMENT_UNRESOLVED;
import static lastseat.purchase.PurchaseState.REFUNDED;
import static lastseat.purchase.PurchaseState.RELEASED;

/**
 * Every move of a purchase's state there is, as one table: from, to, and in its columns everything
 * the move does. The flow, a buyer's cancel, the sweeper, crash recovery and the reconciler all move
 * a purchase through {@link Purchases}, which runs a row's columns and nothing else; a pair of states
 * that is not a row is {@link Purchases.Moved.NotAllowed}, a value, and nothing is tried.
 *
 * <p>Contract — the columns, each done in the transaction that moves the state (so exactly once, or
 * not at all when the compare-and-set finds another state):
 * <ul>
 *   <li>{@link Seats}: KEEP them held, SELL them (all of them, or the move is refused as
 *       {@link Purchases.Moved.SeatsGone}), or GIVE_BACK (capacity returns once, I2);</li>
 *   <li>{@link Tickets}: ISSUE one per seat;</li>
 *   <li>{@link Refund}: QUEUE the refund of the captured payment in the outbox ({@code POST /refunds}
 *       with its own key);</li>
 *   <li>{@link Email}: queue the buyer's CONFIRMATION (with the tickets) or REFUND_NOTICE in the outbox;</li>
 *   <li>{@link Check}: SCHEDULE the reconciler's first question to the provider after
 *       {@code reconcile.settle-time};</li>
 *   <li>{@link Token}: DROP the payment token ({@code payment_token = NULL}): only PAYING and an open
 *       payment (the reconciler's charge sent again) use it, and a token kept is only a liability;</li>
 *   <li>{@link Key}: whether the purchase's Idempotency-Key MAY_LET_GO afterwards (nothing of the
 *       purchase remains: no seat held, no money taken) or must be KEPT. The move writes nothing for
 *       it; {@link PurchaseState#leavesNothing()} reads this column, and every place that lets a key
 *       go asks that.</li>
 * </ul>
 *
 * <p>Hazard: PAYING, PAYMENT_UNKNOWN and PAYMENT_UNRESOLVED have no move to RELEASED except on a
 * definite refusal from the provider (a decline, a failed payment for the key) or a request that
 * provably never left (no connection): that is the money rule. Their seats are never expired, so a
 * capture that arrives late is confirmed, not refunded; REFUNDED is only for a capture whose seats
 * are gone. A row whose Key column says MAY_LET_GO while its purchase still holds a seat or money
 * would let a retry become a second purchase and a second charge.
 */
enum Transition {
    START_PAYMENT(HELD, PAYING,
            Seats.KEEP, Tickets.NONE, Refund.NONE, Email.NONE, Check.NONE, Token.KEEP, Key.KEEP,
            "the checks passed; the payment may now be sent"),
    RELEASE_HOLD(HELD, RELEASED,
            Seats.GIVE_BACK, Tickets.NONE, Refund.NONE, Email.NONE, Check.NONE, Token.DROP, Key.MAY_LET_GO,
            "no payment was sent: checks failed, deadline, cancel or recovery"),
    EXPIRE_HOLD(HELD, EXPIRED,
            Seats.GIVE_BACK, Tickets.NONE, Refund.NONE, Email.NONE, Check.NONE, Token.DROP, Key.MAY_LET_GO,
            "the hold expired before its payment started"),
    CONFIRM(PAYING, CONFIRMED,
            Seats.SELL, Tickets.ISSUE, Refund.NONE, Email.CONFIRMATION, Check.NONE, Token.DROP, Key.KEEP,
            "the provider captured the payment"),
    RELEASE_UNPAID(PAYING, RELEASED,
            Seats.GIVE_BACK, Tickets.NONE, Refund.NONE, Email.NONE, Check.NONE, Token.DROP, Key.MAY_LET_GO,
            "the provider refused, or the request never left"),
    LOSE_ANSWER(PAYING, PAYMENT_UNKNOWN,
            Seats.KEEP, Tickets.NONE, Refund.NONE, Email.NONE, Check.SCHEDULE, Token.KEEP, Key.KEEP,
            "the request may have reached the provider; no definite answer"),
    REFUND(PAYING, REFUNDED,
            Seats.GIVE_BACK, Tickets.NONE, Refund.QUEUE, Email.REFUND_NOTICE, Check.NONE, Token.DROP, Key.KEEP,
            "captured, but the seats are no longer all held"),
    CONFIRM_UNKNOWN(PAYMENT_UNKNOWN, CONFIRMED,
            Seats.SELL, Tickets.ISSUE, Refund.NONE, Email.CONFIRMATION, Check.NONE, Token.DROP, Key.KEEP,
            "the provider says it captured"),
    RELEASE_UNKNOWN(PAYMENT_UNKNOWN, RELEASED,
            Seats.GIVE_BACK, Tickets.NONE, Refund.NONE, Email.NONE, Check.NONE, Token.DROP, Key.MAY_LET_GO,
            "the provider says it refused"),
    REFUND_UNKNOWN(PAYMENT_UNKNOWN, REFUNDED,
            Seats.GIVE_BACK, Tickets.NONE, Refund.QUEUE, Email.REFUND_NOTICE, Check.NONE, Token.DROP, Key.KEEP,
            "captured, but the seats are no longer all held"),
    GIVE_UP(PAYMENT_UNKNOWN, PAYMENT_UNRESOLVED,
            Seats.KEEP, Tickets.NONE, Refund.NONE, Email.NONE, Check.NONE, Token.KEEP, Key.KEEP,
            "the provider could not be asked for reconcile.give-up-after"),
    CONFIRM_UNRESOLVED(PAYMENT_UNRESOLVED, CONFIRMED,
            Seats.SELL, Tickets.ISSUE, Refund.NONE, Email.CONFIRMATION, Check.NONE, Token.DROP, Key.KEEP,
            "the provider says it captured, at last"),
    RELEASE_UNRESOLVED(PAYMENT_UNRESOLVED, RELEASED,
            Seats.GIVE_BACK, Tickets.NONE, Refund.NONE, Email.NONE, Check.NONE, Token.DROP, Key.MAY_LET_GO,
            "the provider says it refused, at last"),
    REFUND_UNRESOLVED(PAYMENT_UNRESOLVED, REFUNDED,
            Seats.GIVE_BACK, Tickets.NONE, Refund.QUEUE, Email.REFUND_NOTICE, Check.NONE, Token.DROP, Key.KEEP,
            "captured, but the seats are no longer all held");

    /** What a move does to the purchase's seats. */
    enum Seats {
        KEEP, SELL, GIVE_BACK
    }

    /** Whether a move issues the purchase's tickets. */
    enum Tickets {
        NONE, ISSUE
    }

    /** Whether a move queues the refund of the captured payment. */
    enum Refund {
        NONE, QUEUE
    }

    /** Which email to the buyer a move queues. */
    enum Email {
        NONE, CONFIRMATION, REFUND_NOTICE
    }

    /** Whether a move schedules the reconciler's question to the provider. */
    enum Check {
        NONE, SCHEDULE
    }

    /** What a move does to the payment token. */
    enum Token {
        KEEP, DROP
    }

    /** Whether the purchase's Idempotency-Key may be let go once the move is made. */
    enum Key {
        KEEP, MAY_LET_GO
    }

    private final PurchaseState from;
    private final PurchaseState to;
    private final Seats seats;
    private final Tickets tickets;
    private final Refund refund;
    private final Email email;
    private final Check check;
    private final Token token;
    private final Key key;
    private final String when;

    Transition(PurchaseState from, PurchaseState to, Seats seats, Tickets tickets, Refund refund, Email email, Check check,
               Token token, Key key, String when) {
        this.from = from;
        this.to = to;
        this.seats = seats;
        this.tickets = tickets;
        this.refund = refund;
        this.email = email;
        this.check = check;
        this.token = token;
        this.key = key;
        this.when = when;
    }

    PurchaseState from() {
        return from;
    }

    PurchaseState to() {
        return to;
    }

    Seats seats() {
        return seats;
    }

    Tickets tickets() {
        return tickets;
    }

    Refund refund() {
        return refund;
    }

    Email email() {
        return email;
    }

    Check check() {
        return check;
    }

    Token token() {
        return token;
    }

    Key key() {
        return key;
    }

    /** The row from {@code from} to {@code to}, if the table has one. */
    static Optional<Transition> between(PurchaseState from, PurchaseState to) {
        return Arrays.stream(values()).filter(t -> t.from == from && t.to == to).findFirst();
    }

    /** The table as Markdown, as {@code docs/DESIGN.md} shows it (a test keeps the two the same); NONE shows as a dash. */
    static String markdown() {
        String head = "| move | from | to | seats | tickets | refund | email | check | token | key | when |\n"
                      + "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
        return head + Arrays.stream(values())
                .map(t -> Stream.of(t, t.from, t.to, t.seats, t.tickets, t.refund, t.email, t.check, t.token, t.key)
                                  .map(cell -> "NONE".equals(cell.name()) ? "—" : "`" + cell.name() + "`")
                                  .collect(Collectors.joining(" | ", "| ", " | " + t.when + " |\n")))
                .collect(Collectors.joining());
    }
}
