package lastseat.purchase;

import java.util.Arrays;
import java.util.EnumSet;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The states of DESIGN.md, plus the one an operator is shown. Terminal: CONFIRMED, RELEASED,
 * EXPIRED, REFUNDED. PAYMENT_UNRESOLVED is a PAYMENT_UNKNOWN purchase whose provider could not be
 * asked for {@code reconcile.give-up-after}: its seats stay held, it is listed and counted for an
 * operator, and it is still asked about (every {@code reconcile.max-backoff}) until the provider answers.
 */
public enum PurchaseState {
    HELD, PAYING, PAYMENT_UNKNOWN, PAYMENT_UNRESOLVED, CONFIRMED, RELEASED, EXPIRED, REFUNDED;

    public boolean terminal() {
        return this == CONFIRMED || this == RELEASED || this == EXPIRED || this == REFUNDED;
    }

    /** A payment request may have reached the provider and its outcome is not known yet. */
    public boolean paymentOpen() {
        return this == PAYMENT_UNKNOWN || this == PAYMENT_UNRESOLVED;
    }

    /**
     * Nothing of the purchase remains — no seat held, no money taken — so its Idempotency-Key may
     * be let go and a retry with it runs afresh: every move of {@link Transition} into this state says
     * {@link Transition.Key#MAY_LET_GO} (a state no move reaches, HELD, holds its seats).
     */
    public boolean leavesNothing() {
        return KeyRule.LEAVE_NOTHING.contains(this);
    }

    /** Read from the table on first use: the table's rows name these states, so it cannot be read while they are made. */
    private static final class KeyRule {
        static final Set<PurchaseState> LEAVE_NOTHING = Arrays.stream(values())
                .filter(state -> Arrays.stream(Transition.values()).anyMatch(t -> t.to() == state)
                                 && Arrays.stream(Transition.values()).filter(t -> t.to() == state)
                                         .allMatch(t -> t.key() == Transition.Key.MAY_LET_GO))
                .collect(Collectors.toCollection(() -> EnumSet.noneOf(PurchaseState.class)));
    }
}
