package lastseat.purchase;

import lastseat.web.Problem;

/**
 * A guarded transition found the purchase in another state than the one it expected
 * ({@code UPDATE ... WHERE id = ? AND state = ?} touched no row): somebody else moved it first.
 */
public final class TransitionRefused extends Problem {
    TransitionRefused(String purchaseId, PurchaseState expected, PurchaseState target) {
        super(409, "purchase-state-changed", "Purchase state changed",
              "Purchase " + purchaseId + " was no longer " + expected + " when it was to become " + target);
    }
}
