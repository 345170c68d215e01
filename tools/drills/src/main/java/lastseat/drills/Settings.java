package lastseat.drills;

import java.time.Duration;

/**
 * How hard the drills push: the deadline the target runs with, the part of it the target keeps for its
 * answer ({@code purchase.answer-reserve}) and the slack its answers get, how
 * many purchases the long-tail drill makes and how many at once, the stampede's buyers and mode
 * ({@code null}: both modes), and the money audit's seed ({@code null}: the current time, printed)
 * and number of buyers.
 */
record Settings(Duration deadline, Duration answerReserve, Duration slack, int longTailPurchases, int longTailConcurrency, int burst,
                int stampedeBuyers, String stampedeMode, Long auditSeed, int auditPurchases) {

    static Settings defaults() {
        return new Settings(Duration.ofMillis(800), Duration.ofMillis(100), Duration.ofMillis(150), 200, 10, 60, 200, null, null, 150);
    }

    Settings withDeadline(Duration other) {
        return new Settings(other, answerReserve, slack, longTailPurchases, longTailConcurrency, burst, stampedeBuyers, stampedeMode,
                            auditSeed, auditPurchases);
    }

    Settings withAnswerReserve(Duration other) {
        return new Settings(deadline, other, slack, longTailPurchases, longTailConcurrency, burst, stampedeBuyers, stampedeMode,
                            auditSeed, auditPurchases);
    }

    Settings withStampede(String mode, int buyers) {
        return new Settings(deadline, answerReserve, slack, longTailPurchases, longTailConcurrency, burst, buyers, mode, auditSeed, auditPurchases);
    }

    Settings withSlack(Duration more) {
        return new Settings(deadline, answerReserve, more, longTailPurchases, longTailConcurrency, burst, stampedeBuyers, stampedeMode,
                            auditSeed, auditPurchases);
    }

    Settings withLongTail(int purchases, int concurrency) {
        return new Settings(deadline, answerReserve, slack, purchases, concurrency, burst, stampedeBuyers, stampedeMode, auditSeed, auditPurchases);
    }

    /** The money audit with this seed ({@code null}: the current time) and this many buyers. */
    Settings withMoneyAudit(Long seed, int purchases) {
        return new Settings(deadline, answerReserve, slack, longTailPurchases, longTailConcurrency, burst, stampedeBuyers, stampedeMode, seed, purchases);
    }

    /** When the target's work ends, from a purchase's arrival: its deadline less the answer's reserve. */
    Duration workTime() {
        return deadline.minus(answerReserve);
    }

    long answerBoundMillis() {
        return deadline.plus(slack).toMillis();
    }
}
