package lastseat.purchase;

import lastseat.config.IdempotencyConfig;
import lastseat.idempotency.IdempotencyKeys;

import java.util.Optional;
import java.util.logging.Logger;

/**
 * The Idempotency-Keys' background job ({@code idempotency.prune-interval}): gives a key whose request's
 * process stopped the answer its purchase ended with, and forgets answered keys past
 * {@code idempotency.retention}, a bounded batch of each per pass.
 *
 * <p>Contract: a key left in flight is settled once recovery has ended its purchase: confirmed or refunded →
 * that answer is stored and replayed; released, expired or never made → the key is let go and a retry runs
 * afresh (as {@code PurchaseRoutes.resume} would); still moving or its payment unknown → left until it ends
 * (a retry meanwhile is told where the purchase stands). It takes the key over first (the compare-and-set a
 * retry uses), so a retry racing it and this job never both settle one key.
 */
final class KeyKeeper {
    private static final Logger LOG = Logger.getLogger(KeyKeeper.class.getName());
    private final IdempotencyKeys keys;
    private final Purchases purchases;
    private final IdempotencyConfig config;

    KeyKeeper(IdempotencyKeys keys, Purchases purchases, IdempotencyConfig config) {
        this.keys = keys;
        this.purchases = purchases;
        this.config = config;
    }

    /** One pass; how many keys it settled or pruned. */
    int keep() {
        int settled = 0;
        for (IdempotencyKeys.Left left : keys.leftInFlight(config.pruneBatch())) {
            Optional<PurchaseView> view = purchases.byKey(left.client(), left.key()).flatMap(purchases::find);
            Optional<PurchaseState> state = view.map(v -> PurchaseState.valueOf(v.state()));
            if (state.isPresent() && !state.get().terminal()) {
                continue;
            }
            Optional<String> token = keys.takeOver(left.client(), left.key(), left.claimedAt());
            if (token.isEmpty()) {
                continue;
            }
            IdempotencyKeys.Ending ending = state.isEmpty() || state.get().leavesNothing()
                    ? keys.forget(left.client(), left.key(), token.get())
                    : keys.complete(left.client(), left.key(), token.get(), PurchaseAnswers.current(view.get()));
            // KEPT (its purchase still holds something) and LOST (another took the key over) settled nothing.
            if (ending == IdempotencyKeys.Ending.LET_GO || ending == IdempotencyKeys.Ending.STORED) {
                settled++;
            }
        }
        if (settled > 0) {
            LOG.info("settled " + settled + " Idempotency-Keys left in flight by a stopped process");
        }
        return settled + keys.prune(config.retention(), config.pruneBatch());
    }
}
