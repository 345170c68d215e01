package lastseat.purchase;

import java.util.Arrays;
import java.util.Optional;

import static lastseat.purchase.PurchaseState.CONFIRMED;
import static lastseat.purchase.PurchaseState.EXPIRED;
import static lastseat.purchase.PurchaseState.HELD;
import static lastseat.purchase.PurchaseState.PAYING;
import static lastseat.purchase.PurchaseState.PAYMENT_UNKNOWN;
import static lastseat.purchase.PurchaseState.PAYMENT_UNRESOLVED;
import static lastseat.purchase.PurchaseState.REFUNDED;
import static lastseat.purchase.PurchaseState.RELEASED;

/**
 * Every move of a purchase's state there is, as one table: from, to, and what the move does. The
 * flow, a buyer's cancel, the sweeper, crash recovery and the reconciler all move a purchase through
 * {@link Purchases}, which runs these rows and nothing else; a move that is not in the table cannot
 * be made.
 *
 * <p>What each column does, in the transaction that moves the state (so it happens exactly once):
 * <ul>
 *   <li>{@code seats}: KEEP them held, SELL them (all of them, or the move is refused as
 *       {@link Purchases.Moved.SeatsGone}), or GIVE_BACK (capacity returns once, I2);</li>
 *   <li>{@code tickets} are issued and the confirmation email queued in the outbox on every move to
 *       CONFIRMED; a refund ({@code POST /refunds}, its own key) and its email on every move to
 *       REFUNDED; a check with the provider is scheduled on the move to PAYMENT_UNKNOWN;</li>
 *   <li>the Idempotency-Key may be let go only once the purchase {@link PurchaseState#leavesNothing()};</li>
 *   <li>the payment token is dropped ({@code payment_token = NULL}) on every move to a terminal state:
 *       only PAYING and an open payment (the reconciler's charge sent again) use it.</li>
 * </ul>
 *
 * <p>Hazard: PAYING, PAYMENT_UNKNOWN and PAYMENT_UNRESOLVED have no move to RELEASED except on a
 * definite refusal from the provider (a decline, a failed payment for the key) or a request that
 * provably never left (no connection): that is the money rule. Their seats are never expired, so a
 * capture that arrives late is confirmed, not refunded; REFUNDED is only for a capture whose seats
 * are gone.
 */
enum Transition {
    START_PAYMENT(HELD, PAYING, Seats.KEEP, "the checks passed; the payment may now be sent"),
    RELEASE_HOLD(HELD, RELEASED, Seats.GIVE_BACK, "no payment was sent: checks failed, deadline, cancel or recovery"),
    EXPIRE_HOLD(HELD, EXPIRED, Seats.GIVE_BACK, "the hold expired before its payment started"),
    CONFIRM(PAYING, CONFIRMED, Seats.SELL, "the provider captured the payment"),
    RELEASE_UNPAID(PAYING, RELEASED, Seats.GIVE_BACK, "the provider refused, or the request never left"),
    LOSE_ANSWER(PAYING, PAYMENT_UNKNOWN, Seats.KEEP, "the request may have reached the provider; no definite answer"),
    REFUND(PAYING, REFUNDED, Seats.GIVE_BACK, "captured, but the seats are no longer all held"),
    CONFIRM_UNKNOWN(PAYMENT_UNKNOWN, CONFIRMED, Seats.SELL, "the provider says it captured"),
    RELEASE_UNKNOWN(PAYMENT_UNKNOWN, RELEASED, Seats.GIVE_BACK, "the provider says it refused"),
    REFUND_UNKNOWN(PAYMENT_UNKNOWN, REFUNDED, Seats.GIVE_BACK, "captured, but the seats are no longer all held"),
    GIVE_UP(PAYMENT_UNKNOWN, PAYMENT_UNRESOLVED, Seats.KEEP, "the provider could not be asked for reconcile.give-up-after"),
    CONFIRM_UNRESOLVED(PAYMENT_UNRESOLVED, CONFIRMED, Seats.SELL, "the provider says it captured, at last"),
    RELEASE_UNRESOLVED(PAYMENT_UNRESOLVED, RELEASED, Seats.GIVE_BACK, "the provider says it refused, at last"),
    REFUND_UNRESOLVED(PAYMENT_UNRESOLVED, REFUNDED, Seats.GIVE_BACK, "captured, but the seats are no longer all held");

    /** What a move does to the purchase's seats. */
    enum Seats {
        KEEP, SELL, GIVE_BACK
    }

    private final PurchaseState from;
    private final PurchaseState to;
    private final Seats seats;
    private final String when;

    Transition(PurchaseState from, PurchaseState to, Seats seats, String when) {
        this.from = from;
        this.to = to;
        this.seats = seats;
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

    /** When the move is made, for the docs and the tests. */
    String when() {
        return when;
    }

    /** The row from {@code from} to {@code to}, if the table has one. */
    static Optional<Transition> between(PurchaseState from, PurchaseState to) {
        return Arrays.stream(values()).filter(t -> t.from == from && t.to == to).findFirst();
    }

    /** The row from {@code from} to {@code to}; for callers that only reach here from a state the table covers. */
    static Transition of(PurchaseState from, PurchaseState to) {
        return between(from, to).orElseThrow(() -> new IllegalArgumentException("no transition " + from + " → " + to));
    }
}
