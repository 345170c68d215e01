package lastseat.payment;

/**
 * What is known after asking the provider to charge. Only {@link Unknown} leaves the question of
 * money open: the request may have reached the provider, so the hold must stay until the provider
 * is asked again by the same idempotency key.
 */
public sealed interface Charge {

    /** The provider captured the payment. */
    record Captured(String paymentId) implements Charge {
    }

    /** The provider answered that it did not charge (402). */
    record Declined(String reason) implements Charge {
    }

    /** The provider refused the request itself (a 4xx other than 402): nothing was charged. */
    record Rejected(int status) implements Charge {
    }

    /** No request reached the provider (no permit in time, connection refused): nothing was charged. */
    record NotSent(String reason, boolean capacityFull) implements Charge {
    }

    /** The request was sent and no clear answer came back (timeout, reset, 5xx, garbage). */
    record Unknown(String reason) implements Charge {
    }
}
