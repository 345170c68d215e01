package lastseat.checks;

/** What the fraud check and the tax quote said, together. */
public sealed interface Checked {

    /** Both passed: the buyer may pay, with this tax. */
    record Passed(Quote quote) implements Checked {
    }

    /** The fraud service declined the buyer, giving {@code reason} (may be null). */
    record Declined(String reason) implements Checked {
    }

    /** {@code service} ("fraud" or "tax") could not be used: it failed, answered nonsense or reset. */
    record Unavailable(String service, String what) implements Checked {
    }
}
