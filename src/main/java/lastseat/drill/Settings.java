package lastseat.drill;

import java.time.Duration;

/**
 * How hard the drills push: the deadline the target runs with and the slack its answers get, how
 * many purchases the long-tail drill makes and how many at once, and the stampede's buyers and mode
 * ({@code null}: both modes).
 */
record Settings(Duration deadline, Duration slack, int longTailPurchases, int longTailConcurrency, int burst,
                int stampedeBuyers, String stampedeMode) {

    static Settings defaults() {
        return new Settings(Duration.ofMillis(800), Duration.ofMillis(150), 200, 10, 60, 200, null);
    }

    Settings withStampede(String mode, int buyers) {
        return new Settings(deadline, slack, longTailPurchases, longTailConcurrency, burst, buyers, mode);
    }

    Settings withSlack(Duration more) {
        return new Settings(deadline, more, longTailPurchases, longTailConcurrency, burst, stampedeBuyers, stampedeMode);
    }

    Settings withLongTail(int purchases, int concurrency) {
        return new Settings(deadline, slack, purchases, concurrency, burst, stampedeBuyers, stampedeMode);
    }

    long answerBoundMillis() {
        return deadline.plus(slack).toMillis();
    }
}
