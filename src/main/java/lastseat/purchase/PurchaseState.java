package lastseat.purchase;

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
     * be let go and a retry with it runs afresh.
     */
    public boolean leavesNothing() {
        return this == RELEASED || this == EXPIRED;
    }
}
