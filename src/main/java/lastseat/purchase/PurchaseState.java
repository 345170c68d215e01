package lastseat.purchase;

/** The states of DESIGN.md. Terminal: CONFIRMED, RELEASED, EXPIRED, REFUNDED. */
public enum PurchaseState {
    HELD, PAYING, PAYMENT_UNKNOWN, CONFIRMED, RELEASED, EXPIRED, REFUNDED
}
