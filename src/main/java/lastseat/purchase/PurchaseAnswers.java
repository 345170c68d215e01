package lastseat.purchase;

import lastseat.config.PurchaseConfig;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.Inventory;
import lastseat.purchase.PurchaseOutcome.Refusal;
import lastseat.web.Edge;
import lastseat.web.Problem;
import lastseat.web.Reply;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The web edge of a purchase, in one place: every outcome of the flow, of the Idempotency-Key and of
 * the admission, and every failure that escapes a purchase, becomes its answer here — its status, its
 * body, and the tag its metric is counted under (a cancel's answer is made here too, but is not a
 * purchase's and is not counted). A refusal becomes a {@link Problem},
 * which {@link Edge} (the web edge's one mapper) turns into {@code application/problem+json} with its
 * {@code Retry-After}; its tag is its kind. Every other answer's tag is one of the names below.
 *
 * <p>Contract: a refusal's detail says what a person needs — which seats, what to do next. Only a
 * refusal about the purchase says that nothing was charged; one about the request (its input, its
 * key, the server's capacity) says only what this request did not do, because an earlier request with
 * the same key may have been charged. Once a purchase's payment may have left, no failure is answered
 * as a refusal: it is 202, "not known yet, ask again" ({@link #unknown}). No exception text, class name
 * or SQL ever reaches a body. Only this class knows the statuses; the flow knows none.
 */
final class PurchaseAnswers {
    private static final String INSTANCE = "/purchases";
    /** The tags of the answers that are not problems (a problem's tag is its kind). */
    static final String CONFIRMED = "confirmed";
    static final String PENDING = "pending";
    static final String REPLAYED = "replayed";
    static final String RESUMED = "resumed";

    private final Edge edge;
    private final Duration deadline;

    PurchaseAnswers(PurchaseConfig config) {
        this.edge = new Edge(config.retryAfter());
        this.deadline = config.deadline();
    }

    /** A reply, the tag its metric is counted under, and whether it is a stored answer sent again. */
    record Answer(Reply reply, String tag, boolean replayed) {
        Answer(Reply reply, String tag) {
            this(reply, tag, false);
        }
    }

    Answer of(PurchaseOutcome outcome) {
        return switch (outcome) {
            case PurchaseOutcome.Confirmed confirmed -> new Answer(purchase(201, confirmed.purchase()), CONFIRMED);
            case PurchaseOutcome.Pending pending -> new Answer(purchase(202, pending.purchase()), PENDING);
            case PurchaseOutcome.Refunded refunded -> problem(new Problem(409, "payment-refunded", "Seats gone, payment refunded",
                    "The seats " + String.join(", ", refunded.seats()) + " were no longer held when the payment was confirmed; the payment "
                    + refunded.paymentId() + " is being refunded",
                    Map.of("purchaseId", refunded.purchaseId(), "state", PurchaseState.REFUNDED.name())));
            case PurchaseOutcome.Refused refused -> problem(refusal(refused.why()));
        };
    }

    private Problem refusal(Refusal why) {
        return switch (why) {
            // About the request: it was never run, but a retry's key may have been charged before.
            case Refusal.Overloaded overloaded -> new Problem(503, "overloaded", "Overloaded",
                    "The server is too busy to finish this purchase in time; this request reserved and charged nothing, "
                    + "try it again after Retry-After");
            case Refusal.SeatsTaken taken -> new Problem(409, "seats-taken", "Seats taken",
                    (taken.seats().size() == 1 ? taken.seats().getFirst() + " is already taken"
                            : String.join(", ", taken.seats()) + " are already taken"),
                    Map.of("seats", List.copyOf(taken.seats())));
            case Refusal.SoldOut soldOut -> new Problem(409, "sold-out", "Sold out",
                    soldOut.available() == 0 ? "The event is sold out"
                            : "Only " + soldOut.available() + " seats are free, " + soldOut.asked() + " were asked for",
                    Map.of("seats", List.of(), "available", soldOut.available()));
            case Refusal.FraudDeclined declined -> new Problem(403, "fraud-declined", "Purchase declined",
                    "The purchase was declined by the fraud check" + (blank(declined.reason()) ? "" : ": " + declined.reason())
                    + "; nothing was charged");
            case Refusal.CheckUnavailable down -> new Problem(503, "check-unavailable", "Check unavailable",
                    "The " + down.service() + " service could not be used: " + down.what() + "; nothing was charged, try again",
                    Map.of("service", down.service()));
            case Refusal.DeadlinePassed late -> deadlinePassed(late.during());
            case Refusal.HoldExpired expired -> new Problem(409, "hold-expired", "Hold expired",
                    "The hold on " + String.join(", ", expired.seats()) + " expired before the checks ended; nothing was charged");
            case Refusal.Cancelled cancelled -> new Problem(409, "purchase-cancelled", "Purchase cancelled",
                    "Purchase " + cancelled.purchaseId() + " was cancelled before its payment; nothing was charged");
            case Refusal.StateChanged changed -> new Problem(409, "purchase-state-changed", "Purchase state changed",
                    "Purchase " + changed.purchaseId() + " is " + changed.state() + ": something else moved it first, and this "
                    + "request started no payment", Map.of("state", changed.state().name()));
            case Refusal.PaymentDeclined declined -> new Problem(402, "payment-declined", "Payment declined",
                    "The payment provider declined the payment" + (blank(declined.reason()) ? "" : ": " + declined.reason())
                    + "; the seats were released and nothing was charged");
            case Refusal.PaymentRefused refused -> new Problem(502, "payment-refused", "Payment refused",
                    "The payment provider refused the request (" + refused.status() + "); the seats were released and nothing was charged");
            case Refusal.PaymentNotAttempted notSent -> switch (notSent.why()) {
                case DEADLINE -> deadlinePassed("before the payment could start");
                case CAPACITY -> new Problem(503, "payment-capacity-full", "Payment capacity full",
                        "The payment could not be attempted: " + notSent.reason() + "; the seats were released and nothing was charged");
                case UNREACHABLE -> new Problem(503, "payment-unavailable", "Payment unavailable",
                        "The payment could not be attempted: " + notSent.reason() + "; the seats were released and nothing was charged");
            };
        };
    }

    private Problem deadlinePassed(String during) {
        return new Problem(504, "deadline-passed", "Deadline passed",
                "The purchase did not finish within " + deadline.toMillis() + " ms (" + during
                + "); the seats were released and nothing was charged", Map.of("deadlineMs", deadline.toMillis()));
    }

    /** An order that cannot be tried at all: nothing was reserved. */
    Answer of(Inventory.Invalid invalid) {
        return problem(switch (invalid) {
            case Inventory.Invalid.UnknownEvent unknown -> Problem.notFound("unknown-event", "There is no event " + unknown.eventId());
            case Inventory.Invalid.TooMany tooMany -> Problem.badRequest("invalid-quantity",
                    tooMany.asked() + " seats were asked for; the event has " + tooMany.capacity());
            case Inventory.Invalid.UnknownSeats unknown -> new Problem(400, "unknown-seats", "Bad request",
                    "The event has no seat " + String.join(", ", unknown.seats()), Map.of("seats", unknown.seats()));
        });
    }

    /** A request without a key a purchase can use. */
    Answer of(IdempotencyKeys.Header header) {
        return problem(switch (header) {
            case IdempotencyKeys.Header.Missing missing -> Problem.badRequest("idempotency-key-missing",
                    "The Idempotency-Key header is required: send a unique value per purchase and reuse it when you retry");
            case IdempotencyKeys.Header.Malformed malformed -> Problem.badRequest("idempotency-key-invalid",
                    "The Idempotency-Key must be 1-255 visible ASCII characters without spaces");
            case IdempotencyKeys.Header.Valid valid -> throw new IllegalArgumentException("a valid key is no refusal");
        });
    }

    /** A key that cannot be run now: in flight, or reused with another body. */
    Answer of(IdempotencyKeys.Claim claim, String key) {
        return switch (claim) {
            case IdempotencyKeys.Claim.InFlight inFlight -> inFlight(key);
            case IdempotencyKeys.Claim.Reused reused -> problem(new Problem(422, "idempotency-key-reused", "Idempotency key reused",
                    "The Idempotency-Key " + key + " was used for a different request body"));
            default -> throw new IllegalArgumentException("a " + claim.getClass().getSimpleName() + " claim is run, not refused");
        };
    }

    /** 409: a request with this key is still running (or its purchase is still being recovered). */
    Answer inFlight(String key) {
        return problem(new Problem(409, "idempotency-key-in-flight", "Request in progress",
                "A request with the Idempotency-Key " + key + " is still being processed; retry after it has finished"));
    }

    /** 503 at once: this instance already runs all the purchases it may. */
    Answer tooMany(int capacity) {
        return problem(new Problem(503, "too-many-purchases", "Too many purchases",
                "This server is already running its " + capacity + " purchases at once; this request reserved and charged "
                + "nothing, try it again after Retry-After"));
    }

    /** 429: this client already has as many purchases in flight on this instance as its key allows. */
    Answer clientLimit(int limit) {
        return problem(new Problem(429, "client-limit", "Too many purchases in flight",
                "This client already has " + limit + " purchases in flight on this server, the limit of its key; this request "
                + "reserved and charged nothing, try it again after Retry-After", Map.of("maxInFlight", limit)));
    }

    /**
     * A failure that escaped before the purchase's payment could leave (the body, the key's claim, a
     * read, or the flow before its reservation): its problem, by {@link Edge}'s one mapping, tagged by its kind.
     */
    Answer failed(Throwable failure) {
        // About the request: a retry's key may have been charged by its earlier request, so no word of "nothing charged".
        return problem(edge.problemFor(failure, INSTANCE,
                "The request failed unexpectedly before this request could start a payment; send it again with the same "
                + "Idempotency-Key"));
    }

    /**
     * 202 for a purchase whose payment may have left and whose outcome cannot be told now (the server
     * stops, a failure nobody expected, its state cannot be read): {@code now} is the purchase as it
     * stands when it could be read; otherwise "not known yet, ask again with the same key". Never a
     * refusal: that would say nothing was charged.
     */
    Answer unknown(String key, Optional<Reply> now) {
        return new Answer(now.orElseGet(() -> Reply.json(202, Map.of("idempotencyKey", key, "state", "PENDING",
                "detail", "The outcome of this purchase is not known yet; retry with the same Idempotency-Key to learn it"), null)),
                PENDING);
    }

    /** A stored answer sent again: as stored, or {@code now} for a pending one whose purchase could be read. */
    Answer replayed(Reply stored, Optional<Reply> now) {
        return new Answer(now.orElse(stored), REPLAYED, true);
    }

    /** A request whose process stopped, answered by where its purchase got to. */
    Answer resumed(Reply now) {
        return new Answer(now, RESUMED);
    }

    /** 201 once confirmed, 202 while it is not over (its payment unknown or unresolved), 200 otherwise; the state says which. */
    static Reply current(PurchaseView view) {
        PurchaseState state = PurchaseState.valueOf(view.state());
        int status = state == PurchaseState.CONFIRMED ? 201 : state.terminal() ? 200 : 202;
        return Reply.json(status, view.withoutTimeline(), "/purchases/" + view.id());
    }

    /** A cancel's answer: not a purchase's, so it carries no tag and is not counted among them. */
    Reply of(Purchases.Cancellation cancellation, String id) {
        return switch (cancellation) {
            case Purchases.Cancellation.Cancelled cancelled -> purchase(200, cancelled.purchase());
            case Purchases.Cancellation.Unknown unknown -> problem(Problem.notFound("unknown-purchase", "There is no purchase " + id)).reply();
            case Purchases.Cancellation.NotCancellable no -> problem(new Problem(409, "purchase-not-cancellable",
                    "Purchase cannot be cancelled", "Purchase " + id + " is " + no.state()
                    + "; only a purchase still HELD (before its payment) can be cancelled", Map.of("state", no.state().name())))
                    .reply();
        };
    }

    private static Reply purchase(int status, PurchaseView view) {
        return Reply.json(status, view, "/purchases/" + view.id());
    }

    /** A refusal's answer, made by {@link Edge}; its metric's tag is its kind. */
    private Answer problem(Problem problem) {
        return new Answer(edge.reply(problem, INSTANCE), problem.kind());
    }

    private static boolean blank(String text) {
        return text == null || text.isBlank();
    }
}
