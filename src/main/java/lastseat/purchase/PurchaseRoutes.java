package lastseat.purchase;

import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.Inventory;
import lastseat.inventory.Order;
import lastseat.web.Bodies;
import lastseat.web.Json;
import lastseat.web.Problem;
import lastseat.web.Reply;
import lastseat.work.Deadline;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * {@code POST /purchases} and {@code GET /purchases/{id}}.
 *
 * <p>Contract: nothing changes before the body, the key and the order are valid (every 4xx about
 * the input is decided first); a key answered once is answered the same way again, without a
 * second purchase or charge. At most {@code purchase.max-in-flight} purchases run at once in this
 * process ({@link Admission}); past that a purchase is answered 503 with {@code Retry-After} at once,
 * having changed nothing. That cap is per instance and protects only this process; seats are decided
 * by the database.
 */
public final class PurchaseRoutes {
    private static final Logger LOG = Logger.getLogger(PurchaseRoutes.class.getName());
    /**
     * Answers a retry should not replay: nothing was charged, so the key is let go and a retry runs
     * again. (The flow never lets a failure escape once a payment may have left; see PurchaseFlow.)
     */
    private static final HeaderName SERVER_TIMING = HeaderNames.create("Server-Timing");
    private static final Set<Integer> RETRYABLE = Set.of(500, 503, 504);

    private final PurchaseFlow flow;
    private final Purchases purchases;
    private final Inventory inventory;
    private final IdempotencyKeys keys;
    private final PurchaseConfig config;
    private final PurchaseMetrics metrics;
    private final Admission admission;
    private final java.util.concurrent.ExecutorService platform;

    public PurchaseRoutes(PurchaseFlow flow, Purchases purchases, Inventory inventory, IdempotencyKeys keys,
                          PurchaseConfig config, PurchaseMetrics metrics) {
        this.flow = flow;
        this.purchases = purchases;
        this.inventory = inventory;
        this.keys = keys;
        this.config = config;
        this.metrics = metrics;
        this.admission = new Admission(config.maxInFlight());
        this.platform = config.platformThreads() == 0 ? null
                : java.util.concurrent.Executors.newFixedThreadPool(config.platformThreads(),
                        Thread.ofPlatform().daemon().name("purchase-", 0).factory());
    }

    public void register(HttpRouting.Builder routing) {
        routing.post("/purchases", this::purchase)
               .get("/purchases/{id}", this::find)
               .post("/purchases/{id}/cancel", this::cancel);
    }

    private void purchase(ServerRequest request, ServerResponse response) {
        long arrived = System.nanoTime();
        Deadline deadline = Deadline.after(config.deadline(), arrived);
        String key = IdempotencyKeys.require(request.headers().first(HeaderNames.create("Idempotency-Key")));
        Bodies.requireJson(request);
        byte[] body = Bodies.read(request, config.maxBodyBytes());
        Order order = Json.read(body, PurchaseRequest.class).toOrder(key, inventory.config().maxSeatsPerPurchase());
        inventory.validate(order);
        // Admission comes after every 4xx about the input (a bad request is answered the same way under
        // load) and before the key is claimed: a refused purchase stores no key, so its retry runs afresh.
        Optional<Admission.Permit> claimed = admission.tryClaim();
        if (claimed.isEmpty()) {
            metrics.outcome(503);
            serverTiming(response, arrived);
            Reply.problem(tooMany(), "/purchases").send(response);
            return;
        }
        Reply reply;
        // The place is held for exactly the work, and given back on every way out of it: an answer, a
        // Problem thrown by the key (409, 422), an unexpected failure or the interrupt. It is back before
        // the answer is written, so a client that has its answer can count on the place being free.
        try (Admission.Permit permit = claimed.get()) {
            reply = platform == null ? admitted(key, body, order, deadline, response)
                    : onPlatformThread(() -> admitted(key, body, order, deadline, response));
        }
        serverTiming(response, arrived);
        reply.send(response);
    }

    /** The benchmark's comparison: the purchase runs on a bounded pool of platform threads, the handler waits. */
    private Reply onPlatformThread(java.util.concurrent.Callable<Reply> work) {
        try {
            return platform.submit(work).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Reply.problem(new Problem(503, "shutting-down", "Shutting down", "The server is stopping"), "/purchases");
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IllegalStateException(e.getCause());
        }
    }

    /**
     * {@code Server-Timing: app;dur=<ms>}: from the handler's start (where the deadline starts) to the
     * answer, on the server's clock, so a client can tell the server's time from its own queueing (I5).
     */
    private static void serverTiming(ServerResponse response, long arrived) {
        response.header(SERVER_TIMING, String.format(Locale.ROOT, "app;dur=%.1f", (System.nanoTime() - arrived) / 1e6));
    }

    /** Free admission places of this process, for the metrics. */
    public int admissionAvailable() {
        return admission.available();
    }

    /** The purchase once admitted: claim the key, run the flow, store or let go of the key. */
    private Reply admitted(String key, byte[] body, Order order, Deadline deadline, ServerResponse response) {
        return switch (keys.claim(key, IdempotencyKeys.fingerprint(body))) {
            case IdempotencyKeys.Claim.Replay replay -> {
                response.header(HeaderNames.create("Idempotent-Replayed"), "true");
                // A pending answer is not final: the retry is told where the purchase stands now.
                yield replay.reply().status() == 202 ? current(replay.reply()) : replay.reply();
            }
            case IdempotencyKeys.Claim.Abandoned abandoned -> resume(key, abandoned, order, deadline);
            case IdempotencyKeys.Claim.Fresh fresh -> runFresh(key, order, deadline);
        };
    }

    /**
     * A retry of a request whose process stopped before answering. Where its purchase got to decides:
     * still moving (recovery has not reached it) → 409, retry later; paid or pending → its current
     * state, stored for the key; never started, released or expired (nothing charged) → run afresh.
     */
    private Reply resume(String key, IdempotencyKeys.Claim.Abandoned abandoned, Order order, Deadline deadline) {
        Optional<String> id = purchases.byKey(key);
        Optional<PurchaseState> state = id.flatMap(purchases::stateOf);
        if (state.isPresent() && List.of(PurchaseState.HELD, PurchaseState.PAYING).contains(state.get())) {
            throw IdempotencyKeys.inFlight(key);
        }
        if (!keys.takeOver(key, abandoned.claimedAt())) {
            throw IdempotencyKeys.inFlight(key);
        }
        if (state.isEmpty() || List.of(PurchaseState.RELEASED, PurchaseState.EXPIRED).contains(state.get())) {
            return runFresh(key, order, deadline);
        }
        Reply reply = current(id.get());
        keys.complete(key, reply);
        return reply;
    }

    private Reply runFresh(String key, Order order, Deadline deadline) {
        Reply reply;
        try {
            reply = run(order, deadline);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            metrics.outcome(503);
            // The payment may have left: the key stays in flight so that no retry starts a second purchase.
            return Reply.problem(new Problem(503, "shutting-down", "Shutting down",
                    "The server is stopping; the purchase is left for recovery to finish"), "/purchases");
        }
        try {
            if (RETRYABLE.contains(reply.status())) {
                keys.forget(key);
            } else {
                keys.complete(key, reply);
            }
        } catch (RuntimeException e) {
            // The buyer still gets the real outcome; the key stays in flight, so a retry with it is
            // refused (409) rather than run again: it must not become a second purchase.
            LOG.log(Level.SEVERE, "could not store the answer for Idempotency-Key " + key, e);
        }
        return reply;
    }

    /** The purchase a stored pending answer was about, as it stands now. */
    private Reply current(Reply pending) {
        String location = pending.location();
        return location == null ? pending : current(location.substring(location.lastIndexOf('/') + 1));
    }

    /** 201 once confirmed, 202 while the payment is unknown, 200 otherwise; the state says which. */
    private Reply current(String id) {
        PurchaseView view = purchases.find(id).orElseThrow().withoutTimeline();
        int status = switch (PurchaseState.valueOf(view.state())) {
            case CONFIRMED -> 201;
            case PAYMENT_UNKNOWN, PAYING, HELD -> 202;
            default -> 200;
        };
        return Reply.json(status, view, "/purchases/" + id);
    }

    private void cancel(ServerRequest request, ServerResponse response) {
        String id = request.path().pathParameters().get("id");
        Reply.json(200, purchases.cancel(id).withoutTimeline(), "/purchases/" + id).send(response);
    }

    private Problem tooMany() {
        return new Problem(503, "too-many-purchases", "Too many purchases",
                "This server is already running its " + admission.capacity() + " purchases at once; "
                + "nothing was reserved or charged, try again after Retry-After", Map.of(), config.retryAfter(), null);
    }

    /** This process's admission, for tests that check every place came back. */
    Admission admission() {
        return admission;
    }

    private Reply run(Order order, Deadline deadline) throws InterruptedException {
        try {
            PurchaseFlow.Outcome outcome = flow.purchase(order, deadline);
            metrics.outcome(outcome.confirmed() ? 201 : 202);
            PurchaseView view = outcome.purchase();
            return Reply.json(outcome.confirmed() ? 201 : 202, view, "/purchases/" + view.id());
        } catch (Problem problem) {
            metrics.outcome(problem.status());
            return Reply.problem(problem, "/purchases");
        } catch (RuntimeException e) {
            LOG.log(Level.SEVERE, "purchase failed", e);
            metrics.outcome(500);
            return Reply.problem(new Problem(500, "internal", "Internal error",
                    "The purchase failed unexpectedly before any payment; nothing was charged, try again"), "/purchases");
        }
    }

    private void find(ServerRequest request, ServerResponse response) {
        String id = request.path().pathParameters().get("id");
        PurchaseView view = purchases.find(id)
                .orElseThrow(() -> Problem.notFound("unknown-purchase", "There is no purchase " + id));
        Reply.json(200, view, null).send(response);
    }
}
