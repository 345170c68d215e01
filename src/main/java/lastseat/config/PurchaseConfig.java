package lastseat.config;

import java.time.Duration;

/**
 * The {@code purchase} section: one purchase's time and size limits, and the sweeper that ends the
 * purchases nobody else will. Each value is checked against its range here, when the record is made;
 * how it relates to other keys (the age of an abandoned purchase) is
 * {@link LastseatConfig}'s.
 *
 * @param deadline       {@code purchase.deadline}: from a purchase's arrival to its answer (I5)
 * @param answerReserve  {@code purchase.answer-reserve}: the deadline's last part, kept for writing the outcome
 *                       and answering; the purchase's work (waits, checks, the payment call) ends before it
 * @param holdTtl        {@code purchase.hold-ttl}: how long a hold lasts before the sweeper may expire it
 * @param maxSeats       {@code purchase.max-seats}: seats one purchase may take
 * @param maxBodyBytes   {@code purchase.max-body-bytes}: the largest {@code POST /purchases} body
 * @param reserveRounds  {@code purchase.reserve-rounds}: rounds a quantity purchase makes to find free seats
 *                       when others take its candidates first
 * @param retryAfter     {@code purchase.retry-after}: the {@code Retry-After} of every 503 and 429 lastseat answers (the web edge applies it)
 * @param sweepInterval  {@code purchase.sweep-interval}: how often the sweeper runs
 * @param sweepBatch     {@code purchase.sweep-batch}: purchases one sweep moves at most, of each kind
 * @param abandonedAfter {@code purchase.abandoned-after}: how long after its deadline a purchase still HELD
 *                       or PAYING counts as left by a process that stopped
 * @param paceWindow     {@code purchase.pace-window}: how far back admission's measured times go
 * @param paceSamples    {@code purchase.pace-samples}: the most recent times admission keeps, of each kind
 * @param maxInFlight    {@code purchase.max-in-flight}: purchases this process runs at once (per instance:
 *                       every instance counts only its own)
 */
public record PurchaseConfig(Duration deadline, Duration answerReserve, Duration holdTtl, int maxSeats, int maxBodyBytes, int reserveRounds,
                             Duration retryAfter, Duration sweepInterval, int sweepBatch, Duration abandonedAfter,
                             Duration paceWindow, int paceSamples, int maxInFlight) {

    public PurchaseConfig {
        Check.between("purchase.deadline", deadline, Duration.ofMillis(50), Duration.ofSeconds(30));
        Check.between("purchase.answer-reserve", answerReserve, Duration.ZERO, deadline.dividedBy(2));
        Check.between("purchase.hold-ttl", holdTtl, Duration.ofMillis(100), Duration.ofHours(1));
        Check.between("purchase.max-seats", maxSeats, 1, 100);
        Check.between("purchase.max-body-bytes", maxBodyBytes, 256, 1024 * 1024);
        Check.between("purchase.reserve-rounds", reserveRounds, 1, 10);
        Check.between("purchase.retry-after", retryAfter, Duration.ofSeconds(1), Duration.ofMinutes(10));
        Check.between("purchase.sweep-interval", sweepInterval, Duration.ofMillis(10), Duration.ofMinutes(10));
        Check.between("purchase.sweep-batch", sweepBatch, 1, 10_000);
        Check.between("purchase.abandoned-after", abandonedAfter, Duration.ofMillis(100), Duration.ofHours(1));
        Check.between("purchase.pace-window", paceWindow, Duration.ofSeconds(1), Duration.ofMinutes(10));
        Check.between("purchase.pace-samples", paceSamples, 10, 10_000);
        Check.between("purchase.max-in-flight", maxInFlight, 1, 100_000);
    }

    /**
     * From a purchase's arrival to the end of its work: {@code purchase.deadline − purchase.answer-reserve}.
     * Every wait, check and payment call of the purchase ends by then, so that writing how it ended and
     * sending the answer fit in the deadline even when many purchases end at once on a busy machine.
     */
    public Duration workTime() {
        return deadline.minus(answerReserve);
    }

    static PurchaseConfig read(Reader keys) {
        return new PurchaseConfig(
                keys.duration("purchase.deadline"),
                keys.duration("purchase.answer-reserve"),
                keys.duration("purchase.hold-ttl"),
                keys.integer("purchase.max-seats"),
                keys.integer("purchase.max-body-bytes"),
                keys.integer("purchase.reserve-rounds"),
                keys.duration("purchase.retry-after"),
                keys.duration("purchase.sweep-interval"),
                keys.integer("purchase.sweep-batch"),
                keys.duration("purchase.abandoned-after"),
                keys.duration("purchase.pace-window"),
                keys.integer("purchase.pace-samples"),
                keys.integer("purchase.max-in-flight"));
    }
}
