package lastseat.checks;

import lastseat.web.Problem;

/** 403: the fraud service declined the buyer; the hold was released and nothing was charged. */
public final class FraudDeclined extends Problem {
    FraudDeclined(String reason) {
        super(403, "fraud-declined", "Purchase declined",
              "The purchase was declined by the fraud check" + (reason == null || reason.isBlank() ? "" : ": " + reason));
    }
}
