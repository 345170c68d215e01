package lastseat.purchase;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.logging.Logger;

/**
 * The sweeper, one background job per instance ({@code purchase.sweep-interval}): expires holds past
 * their expiry (HELD → EXPIRED, seats back) and finishes purchases a stopped process left (still
 * HELD or PAYING {@code abandonedAge} after their last move, the deadline plus
 * {@code purchase.abandoned-after}: HELD → RELEASED, PAYING →
 * PAYMENT_UNKNOWN for the reconciler). The first sweep runs at start-up, which is the crash recovery.
 *
 * <p>Contract: every move is the state machine's compare-and-set, so sweepers on several instances
 * (and a buyer cancelling, and a reservation taking expired seats) never move one purchase twice;
 * a purchase whose payment is in flight or unknown is never expired. At most {@code batch} of each
 * kind per sweep.
 */
final class Sweeper {
    private static final Logger LOG = Logger.getLogger(Sweeper.class.getName());
    private final Purchases purchases;
    private final int batch;
    private final Duration abandonedAge;
    private final Clock clock;

    Sweeper(Purchases purchases, int batch, Duration abandonedAge, Clock clock) {
        this.purchases = purchases;
        this.batch = batch;
        this.abandonedAge = abandonedAge;
        this.clock = clock;
    }

    /** One sweep; returns how many purchases it moved. */
    int sweep() {
        int moved = 0;
        for (String id : purchases.dueToExpire(batch)) {
            moved += purchases.expire(id) instanceof Purchases.Moved.Done ? 1 : 0;
        }
        Instant cutoff = clock.instant().minus(abandonedAge);
        for (String id : purchases.abandoned(cutoff, batch)) {
            var recovered = purchases.recover(id, cutoff);
            if (recovered.isPresent()) {
                LOG.info("recovered purchase " + id + " left by a stopped process: now " + recovered.get());
                moved++;
            }
        }
        return moved;
    }
}
