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

    /** No request reached the provider: nothing was charged. */
    record NotSent(Why why, String reason) implements Charge {
        public enum Why {
            /** No bulkhead permit in time, or too little time left to use one. */
            CAPACITY,
            /** The deadline had passed before the payment could start. */
            DEADLINE,
            /** The provider could not be reached. */
            UNREACHABLE
        }
    }

    /** The request was sent and no clear answer came back (timeout, reset, 5xx, garbage). */
    record Unknown(String reason) implements Charge {
    }
}
