package lastseat.purchase;

import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import lastseat.access.Caller;
import lastseat.access.ClientLimits;
import lastseat.config.AdmissionConfig;
import lastseat.config.PurchaseConfig;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.Inventory;
import lastseat.inventory.Order;
import lastseat.web.Arrival;
import lastseat.web.Bodies;
import lastseat.web.Json;
import lastseat.web.Problem;
import lastseat.web.Reply;
import lastseat.web.Text;
import lastseat.payment.PaymentGateway;
import lastseat.work.Deadline;
import lastseat.work.Latency;

import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * {@code /purchases}: buy ({@code POST}), read one ({@code GET /{id}}), list a state
 * ({@code GET ?state=}), cancel ({@code POST /{id}/cancel}).
 *
 * <p>Contract: nothing changes before the body, the key and the order are valid (every 4xx about
 * the input is decided first); a key answered once is answered the same way again, without a
 * second purchase or charge. At most {@code purchase.max-in-flight} purchases run at once in this
 * process ({@link Admission}); past that a purchase is answered 503 with {@code Retry-After} at once,
 * having changed nothing. That cap is per instance and protects only this process; seats are decided
 * by the database. Every answer to {@code POST /purchases} — an outcome, a refusal of its input or
 * key, or a failure that escaped — is made in {@link PurchaseAnswers} and sent and counted once, in
 * {@link #send}; nothing is left to the routing's error handler.
 *
 * <p>Hazard — the money rule at the edge: once a purchase's reservation is made, PAYING may be
 * written and its payment may leave (the reconciler sends the charge again for a purchase it finds
 * PAYING). From then on, and for any request whose key's earlier purchase may have been charged (a
 * replay, a resume), a failure is answered 202 "not known yet, ask again", never a refusal: a refusal
 * tells the buyer nothing was charged.
 */
public final class PurchaseRoutes implements HttpService {
    private static final Logger LOG = Logger.getLogger(PurchaseRoutes.class.getName());
    private static final HeaderName SERVER_TIMING = HeaderNames.create("Server-Timing");
    private static final HeaderName REPLAYED = HeaderNames.create("Idempotent-Replayed");
    private static final HeaderName IDEMPOTENCY_KEY = HeaderNames.create("Idempotency-Key");
    /**
     * Answers a retry should not replay: nothing was charged or held, so the key is let go and a
     * retry runs again (the flow answers no 5xx while anything of the purchase remains).
     */
    private static final Set<Integer> RETRYABLE = Set.of(500, 503, 504);
    /** Longest a purchase waits for a place before it asks the pace again whether it may go on waiting. */
    private static final Duration WAIT_SLICE = Duration.ofMillis(20);

    private final PurchaseFlow flow;
    private final Purchases purchases;
    private final Inventory inventory;
    private final IdempotencyKeys keys;
    private final PurchaseConfig config;
    private final PurchaseMetrics metrics;
    private final PurchaseAnswers answers;
    private final Pace pace;
    private final Admission admission;
    private final ClientLimits limits = new ClientLimits();
    private final SoldOutHints soldOut = new SoldOutHints();

    /** {@code admission}: the figures {@link Pace} plans with, derived by the configuration tree. */
    public PurchaseRoutes(PurchaseFlow flow, Purchases purchases, Inventory inventory, IdempotencyKeys keys,
                          PurchaseConfig config, AdmissionConfig admission, PurchaseMetrics metrics, PaymentGateway payments) {
        this(flow, purchases, inventory, keys, config, metrics, new Pace(admission.deadline(), admission.margin(), admission.permits(),
                Latency.of(admission.toPayment()), payments::callTime));
    }

    PurchaseRoutes(PurchaseFlow flow, Purchases purchases, Inventory inventory, IdempotencyKeys keys,
                   PurchaseConfig config, PurchaseMetrics metrics, Pace pace) {
        this.flow = flow;
        this.purchases = purchases;
        this.inventory = inventory;
        this.keys = keys;
        this.config = config;
        this.metrics = metrics;
        this.answers = new PurchaseAnswers(config);
        this.pace = pace;
        this.admission = new Admission(config.maxInFlight(), pace::limit);
    }

    @Override
    public void routing(HttpRules rules) {
        rules.post("/", this::purchase)
             .get("/", this::list)
             .get("/{id}", this::find)
             .post("/{id}/cancel", this::cancel);
    }

    private void purchase(ServerRequest request, ServerResponse response) {
        // From the access filter's first look, before the key's read: the deadline covers that wait too.
        long arrived = Arrival.of(request);
        Reach reach = new Reach();
        PurchaseAnswers.Answer answer;
        try {
            answer = purchase(request, arrived, reach);
        } catch (RuntimeException | Error e) {
            if (reach.reserved()) {
                // Only a failure while a 202 was being made gets here: it must still be a 202.
                LOG.log(Level.SEVERE, "purchase failed after its reservation; answered 202, it stays for recovery", e);
                answer = answers.unknown(reach.key(), Optional.empty());
            } else {
                answer = answers.failed(e);
            }
        }
        send(answer, response, arrived);
    }

    private PurchaseAnswers.Answer purchase(ServerRequest request, long arrived, Reach reach) {
        // The work's deadline: purchase.answer-reserve before the answer's, kept for writing the outcome and answering.
        Deadline deadline = Deadline.after(config.workTime(), arrived);
        IdempotencyKeys.Header header = IdempotencyKeys.require(request.headers().first(IDEMPOTENCY_KEY));
        if (!(header instanceof IdempotencyKeys.Header.Valid(String key))) {
            return answers.of(header);
        }
        Bodies.requireJson(request);
        byte[] body = Bodies.read(request, config.maxBodyBytes());
        Caller caller = Caller.of(request);
        Order order = Json.read(body, PurchaseRequest.class).toOrder(caller.name(), key, config.maxSeats());
        Optional<Inventory.Invalid> invalid = inventory.validate(order);
        if (invalid.isPresent()) {
            return answers.of(invalid.get());
        }
        Optional<ClientLimits.Slot> slot = limits.enter(caller);
        if (slot.isEmpty()) {
            return answers.clientLimit(caller.maxInFlight().orElseThrow());
        }
        // The client's slot is held until the answer is decided, on every way out.
        try (ClientLimits.Slot held = slot.get()) {
            return admitAndRun(key, body, order, deadline, arrived, reach);
        }
    }

    private PurchaseAnswers.Answer admitAndRun(String key, byte[] body, Order order, Deadline deadline, long arrived, Reach reach) {
        // Admission comes after every 4xx about the input (a bad request is answered the same way under
        // load) and before the key is claimed: a refused purchase stores no key, so its retry runs afresh.
        Optional<Admission.Permit> claimed;
        try {
            claimed = admit(arrived);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return answers.of(new PurchaseOutcome.Refused(new PurchaseOutcome.Refusal.Overloaded()));
        }
        if (claimed.isEmpty()) {
            Turn turn = notAdmitted(key, body, order, deadline, admission.mark());
            if (turn instanceof Turn.Told(PurchaseAnswers.Answer told)) {
                return told;
            }
            claimed = Optional.of(((Turn.Go) turn).permit());
        }
        // The place is held for exactly the work, and given back on every way out of it: an answer, an
        // unexpected failure or the interrupt. It is back before the answer is written, so a client that
        // has its answer can count on the place being free.
        try (Admission.Permit permit = claimed.get()) {
            return admitted(key, body, order, deadline, progress(permit), reach);
        }
    }

    /**
     * How far one request's purchase got: once its reservation is made, PAYING may be written and its
     * payment may leave, so from then on no failure may be answered as a refusal.
     */
    private static final class Reach {
        private volatile String key;

        void reserved(String key) {
            this.key = key;
        }

        boolean reserved() {
            return key != null;
        }

        String key() {
            return key;
        }
    }

    /**
     * A place for a purchase that has spent the time since {@code arrived}: at once while fewer than
     * the {@link Pace}'s limit run, else after a wait only as long as its deadline has room for; none
     * when it could not reach its payment in time anyway.
     */
    private Optional<Admission.Permit> admit(long arrived) throws InterruptedException {
        Duration elapsed = Duration.ofNanos(System.nanoTime() - arrived);
        if (!pace.canFinish(elapsed, admission.capacity() - admission.available())) {
            return Optional.empty();
        }
        Optional<Admission.Permit> permit = admission.tryClaim();
        if (permit.isPresent() || admission.limit() >= admission.capacity()) {
            // At the process's own cap there is no waiting: that cap protects this process, at once.
            return permit;
        }
        while (true) {
            // The room is asked again every slice: the pace it was planned on may change while it waits.
            Duration room = pace.waitFor(Duration.ofNanos(System.nanoTime() - arrived), admission.waiting() + 1);
            if (room.isZero()) {
                return Optional.empty();
            }
            permit = admission.claim(room.compareTo(WAIT_SLICE) < 0 ? room : WAIT_SLICE);
            if (permit.isPresent()) {
                return permit;
            }
        }
    }

    /** What becomes of a purchase given no place at once: an answer, or a place that came while it waited. */
    private sealed interface Turn {
        record Told(PurchaseAnswers.Answer answer) implements Turn {
        }

        record Go(Admission.Permit permit) implements Turn {
        }
    }

    /**
     * A purchase given no place: nothing is reserved and no key is stored. A key used before gets its
     * own answer (a replay, in flight, reused). When a read of the last moments leaves no doubt that
     * plenty of seats stay free, it is 503 with Retry-After at once. Otherwise, once the purchases admitted before it
     * ({@code mark}) have made their reservations, a read says whether its seats are gone — 409, the
     * truth, even when busy. If a quantity is asked for and fewer seats are free than the purchases this process may run, it
     * waits for a place while its deadline leaves room for the whole path after the wait (then it runs, and its
     * reservation tells the truth);
     * only seats still free at the end, or plenty of them, make it 503 with Retry-After.
     */
    private Turn notAdmitted(String key, byte[] body, Order order, Deadline deadline, long mark) {
        if (plentyBeyondDoubt(order, deadline)) {
            // Whatever those ahead of it reserve, seats stay free and no place is waited for: the wait would
            // end in 503 too (unless another instance sold them meanwhile), and it is what made refusals slow.
            return new Turn.Told(busy());
        }
        try {
            boolean aheadReserved = admission.awaitReservationsAhead(mark, deadline.remaining().dividedBy(2));
            Purchases.Seen seen = seen(order, deadline, aheadReserved ? OptionalLong.of(mark) : OptionalLong.empty());
            if (seen.gone().isEmpty() && !order.namesSeats() && admission.available() > 0
                && seen.free() - order.quantity() < admission.limit()) {
                // So few seats left that as many purchases as this process runs (and another instance's)
                // may take them all: the answer is likely 409 in a moment, not 503 now. A place comes back as soon as one of them ends. (Named seats that
                // are free now are not what those running wanted; at the process's own cap, no waiting.)
                // A place later than the whole path allows would take a seat and call the checks only to be cut by the deadline.
                Duration room = pace.roomToWait(deadline.remaining());
                Optional<Admission.Permit> permit = room.isZero() ? Optional.empty() : admission.claim(room);
                if (permit.isPresent()) {
                    return new Turn.Go(permit.get());
                }
                seen = purchases.seen(order, enough(order), deadline);
            }
            if (seen.gone().isPresent()) {
                PurchaseOutcome.Refusal gone = seen.gone().get();
                if (gone instanceof PurchaseOutcome.Refusal.SoldOut) {
                    soldOut.soldOut(order.eventId());
                }
                Optional<PurchaseAnswers.Answer> told = goneByRead(key, body, order, gone, deadline);
                if (told.isPresent()) {
                    return new Turn.Told(told.get());
                }
                // Its own earlier request may be what took them: a key used before gets its own answer.
                return new Turn.Told(usedBefore(key, order.client(), body, deadline)
                                             .orElseGet(() -> answers.of(new PurchaseOutcome.Refused(gone))));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // Seats free and no place: try again later (a retry of a key used before learns its answer then).
        return new Turn.Told(busy());
    }

    /** Seats free and no place for the purchase: 503 with Retry-After, at the process's cap or under the pace's limit. */
    private PurchaseAnswers.Answer busy() {
        return admission.available() == 0 ? answers.tooMany(admission.capacity())
                : answers.of(new PurchaseOutcome.Refused(new PurchaseOutcome.Refusal.Overloaded()));
    }

    /** The answer a key used before gets without running (a replay, in flight, reused); empty for a new key. */
    private Optional<PurchaseAnswers.Answer> usedBefore(String key, String client, byte[] body, Deadline deadline) {
        if (!keys.known(client, key, deadline)) {
            return Optional.empty();
        }
        IdempotencyKeys.Claim claim = keys.claim(client, key, IdempotencyKeys.fingerprint(body), deadline);
        return switch (claim) {
            case IdempotencyKeys.Claim.Fresh fresh -> {
                end(key, keys.forget(client, key, fresh.token()));
                yield Optional.empty();
            }
            // Its process stopped before answering, and the seats gone may be its own purchase's, paid for:
            // never "seats taken". The retry that has a place resumes it.
            case IdempotencyKeys.Claim.Abandoned abandoned -> Optional.of(answers.inFlight(key));
            default -> Optional.of(answered(key, claim));
        };
    }

    /**
     * Free seats that make a quantity plenty: more than every purchase running could take with it, and
     * more than a refused buyer would wait for a place for (see {@link #notAdmitted}).
     */
    private int enough(Order order) {
        return order.quantity() + unreserved() + spare() + 1;
    }

    private int running() {
        return admission.capacity() - admission.available();
    }

    /** The most seats the purchases running now may still take. */
    private int unreserved() {
        return running() * config.maxSeats();
    }

    /** The places a refused buyer could wait for: those running, or this process's limit if more. */
    private int spare() {
        return Math.max(running(), admission.limit());
    }

    /** How recently a read of an event's free seats may stand in for a new one, when it showed plenty. */
    private static final Duration PLENTY_FRESH = Duration.ofMillis(100);
    /** The most events whose last count of free seats is kept. */
    private static final int PLENTY_EVENTS = 1000;
    private final Map<String, Plenty> plenty = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * An event's free seats as read at {@code atNanos}, less what every purchase admitted up to the mark
     * {@code admitted} and not yet reserved at the read could still take: so {@code free} less the most
     * each purchase admitted after that mark may take is the fewest free now. It may be below zero.
     */
    private record Plenty(int free, long atNanos, long admitted) {
        /** Kept while the first read of an event is made: no seats, and already stale. */
        static Plenty firstLook() {
            return new Plenty(0, System.nanoTime() - PLENTY_FRESH.toNanos(), 0);
        }
    }

    /**
     * What a read says of the order's seats, or, for a quantity, a read of the last {@link #PLENTY_FRESH}
     * that showed so many free seats that even every purchase admitted since, each taking the most seats
     * a purchase may, could not have left too few: under an overload with plenty of seats every refused
     * buyer would otherwise read the database, and take its connections from the purchases running.
     * (Another instance's sales are bounded by the freshness alone.)
     */
    private Purchases.Seen seen(Order order, Deadline deadline, OptionalLong reservedUpTo) {
        OptionalLong fewest = fewestFree(order);
        if (fewest.isPresent() && fewest.getAsLong() - order.quantity() >= running()) {
            return new Purchases.Seen(Optional.empty(), (int) fewest.getAsLong());
        }
        long admitted = admission.mark();
        int unreserved = unreserved();
        Purchases.Seen seen = purchases.seen(order, enough(order), deadline);
        if (!order.namesSeats()) {
            // Kept with a mark up to which every purchase's seats are in the count: the caller's own when
            // its wait saw all of those reserved; else the mark now, less what the running may still take.
            if (reservedUpTo.isPresent()) {
                keep(order.eventId(), new Plenty(seen.free(), System.nanoTime(), reservedUpTo.getAsLong()));
            } else {
                keep(order.eventId(), new Plenty(seen.free() - unreserved, System.nanoTime(), admitted));
            }
        }
        return seen;
    }

    private void keep(String eventId, Plenty count) {
        makeRoom();
        plenty.put(eventId, count);
    }

    /** At {@link #PLENTY_EVENTS} the kept counts are dropped: each is read again when a refused buyer needs it. */
    private void makeRoom() {
        if (plenty.size() >= PLENTY_EVENTS) {
            plenty.clear();
        }
    }

    /**
     * The fewest seats of a quantity's event that can be free now, from a read of the last
     * {@link #PLENTY_FRESH} less what every purchase admitted since could have taken; empty without such a read.
     */
    private OptionalLong fewestFree(Order order) {
        if (order.namesSeats()) {
            return OptionalLong.empty();
        }
        Plenty known = plenty.get(order.eventId());
        if (known == null || System.nanoTime() - known.atNanos() >= PLENTY_FRESH.toNanos()) {
            return OptionalLong.empty();
        }
        return OptionalLong.of(known.free() - (admission.mark() - known.admitted()) * config.maxSeats());
    }

    /**
     * True when a read leaves no doubt that a buyer refused a place is told 503: its seats stay free
     * whatever the purchases running take, and too many stay free for it to wait for a place. A read of
     * the last {@link #PLENTY_FRESH} answers; past that, a new read is made only if the last one showed
     * plenty, or by the first refused buyer of an event not read before (an event selling its last
     * seats is read ahead of the wait once, not by every refused buyer).
     */
    private boolean plentyBeyondDoubt(Order order, Deadline deadline) {
        if (order.namesSeats()) {
            return false;
        }
        int spare = spare();
        OptionalLong fewest = fewestFree(order);
        if (fewest.isPresent()) {
            return fewest.getAsLong() - order.quantity() >= spare;
        }
        Plenty last = plenty.get(order.eventId());
        if (last == null) {
            // Of an event this process knows nothing of, the first refused buyer reads; those with it
            // wait as before, so a burst at a last seat makes one read more, not one per buyer.
            makeRoom();
            if (plenty.putIfAbsent(order.eventId(), Plenty.firstLook()) != null) {
                return false;
            }
        } else if (last.free() - order.quantity() < spare) {
            return false;
        }
        // The mark first: a purchase admitted between the two readings is then counted twice, never missed.
        long admitted = admission.mark();
        int unreserved = unreserved();
        // This read may miss the seats the purchases running are about to take: as many as each may take
        // is counted as gone, so the figure kept is one that waiting for them could only have raised. It
        // counts that many further than plenty, so that what is kept stays plenty for a while of admissions.
        int free = inventory.freeUpTo(order.eventId(), enough(order) + unreserved, deadline) - unreserved;
        keep(order.eventId(), new Plenty(free, System.nanoTime(), admitted));
        return free - order.quantity() >= spare;
    }

    /** What the flow tells the permit: the reservation is made; the payment starts after this long. */
    private PurchaseFlow.Progress progress(Admission.Permit permit) {
        return new PurchaseFlow.Progress() {
            @Override
            public void reserved() {
                permit.reserved();
            }

            @Override
            public void paying() {
                pace.reachedPayment(permit.age());
            }
        };
    }

    /** The one way out of {@code POST /purchases}: every answer is counted here, once, under its tag. */
    private void send(PurchaseAnswers.Answer answer, ServerResponse response, long arrived) {
        metrics.outcome(answer, Duration.ofNanos(System.nanoTime() - arrived));
        serverTiming(response, arrived);
        if (answer.replayed()) {
            response.header(REPLAYED, "true");
        }
        answer.reply().send(response);
    }

    /**
     * {@code Server-Timing: app;dur=<ms>}: from the access filter's first look (where the deadline starts) to the
     * answer, on the server's clock, so a client can tell the server's time from its own queueing (I5).
     */
    private static void serverTiming(ServerResponse response, long arrived) {
        // Tenths of a millisecond, written by hand: String.format was a percent of an overload's CPU.
        long tenths = (System.nanoTime() - arrived) / 100_000;
        response.header(SERVER_TIMING, "app;dur=" + tenths / 10 + "." + tenths % 10);
    }

    /** Free admission places of this process, for the metrics. */
    public int admissionAvailable() {
        return admission.available();
    }

    /** Purchases this process is running now. */
    public int inFlight() {
        return admission.capacity() - admission.available();
    }

    /**
     * Waits, at most {@code bound}, until no purchase runs in this process: for the shutdown, after
     * the server has stopped taking requests. True when none is left.
     */
    public boolean drain(Duration bound) {
        long until = System.nanoTime() + bound.toNanos();
        while (inFlight() > 0 && System.nanoTime() < until) {
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return inFlight() == 0;
            }
        }
        return inFlight() == 0;
    }

    /** {@link #admitted} as a request with a place runs it: for tests that send a key's retries without a server. */
    PurchaseAnswers.Answer admitted(String key, byte[] body, Order order, Deadline deadline) {
        return admitted(key, body, order, deadline, PurchaseFlow.Progress.NONE, new Reach());
    }

    /** The purchase once admitted: claim the key, run the flow, store or let go of the key. */
    private PurchaseAnswers.Answer admitted(String key, byte[] body, Order order, Deadline deadline,
                                            PurchaseFlow.Progress progress, Reach reach) {
        Optional<PurchaseAnswers.Answer> gone = goneBeforeClaim(key, body, order, deadline);
        if (gone.isPresent()) {
            return gone.get();
        }
        IdempotencyKeys.Claim claim = keys.claim(order.client(), key, IdempotencyKeys.fingerprint(body), deadline);
        return switch (claim) {
            case IdempotencyKeys.Claim.Abandoned abandoned -> resume(key, abandoned, order, deadline, progress, reach);
            case IdempotencyKeys.Claim.Fresh fresh -> runFresh(key, fresh.token(), order, deadline, progress, reach);
            default -> answered(key, claim);
        };
    }

    /**
     * A quantity for an event a purchase here last found sold out ({@link SoldOutHints}): when a read,
     * before the key's claim, finds its seats still gone, 409 stored for the key in one write, as for a
     * buyer given no place ({@link #goneByRead}). A key used before goes on as it always does (its
     * replay, its in-flight answer, its resumption). Empty when the purchase goes on.
     */
    private Optional<PurchaseAnswers.Answer> goneBeforeClaim(String key, byte[] body, Order order, Deadline deadline) {
        if (order.namesSeats() || !soldOut.hinted(order.eventId())) {
            return Optional.empty();
        }
        Purchases.Seen seen = purchases.seen(order, order.quantity(), deadline);
        if (seen.gone().isEmpty()) {
            soldOut.seatsFree(order.eventId());
            return Optional.empty();
        }
        return goneByRead(key, body, order, seen.gone().get(), deadline);
    }

    /**
     * 409 for a buyer whose seats a read found gone before it claimed its key, stored for the key in
     * the same single write that takes it: a later request with the key — its own original, delayed
     * before its claim, among them — is told the same 409 and cannot buy a seat that came back under a
     * key already told "nothing was bought". The seats are read before the key is written, so a key
     * whose request took them is already claimed. Empty when the key was used before (nothing written).
     */
    private Optional<PurchaseAnswers.Answer> goneByRead(String key, byte[] body, Order order, PurchaseOutcome.Refusal gone,
                                                        Deadline deadline) {
        PurchaseAnswers.Answer refused = answers.of(new PurchaseOutcome.Refused(gone));
        return keys.answerUnused(order.client(), key, IdempotencyKeys.fingerprint(body), refused.reply(), deadline)
                ? Optional.of(refused) : Optional.empty();
    }

    /** A key used before: its stored answer replayed, or why it cannot be run now. */
    private PurchaseAnswers.Answer answered(String key, IdempotencyKeys.Claim claim) {
        if (claim instanceof IdempotencyKeys.Claim.Replay(Reply stored)) {
            // A pending answer is not final: the retry is told where the purchase stands now, when that can be read.
            return answers.replayed(stored, stored.status() == 202 ? now(stored) : Optional.empty());
        }
        return answers.of(claim, key);
    }

    /**
     * A retry of a request whose process stopped before answering. Where its purchase got to decides:
     * still moving (recovery has not reached it) → 409, retry later; paid or pending → its current
     * state, stored for the key; never started, released or expired (nothing charged) → run afresh.
     * Its earlier request may have been charged, so a failure to tell is 202, "ask again".
     */
    private PurchaseAnswers.Answer resume(String key, IdempotencyKeys.Claim.Abandoned abandoned, Order order, Deadline deadline,
                                          PurchaseFlow.Progress progress, Reach reach) {
        Optional<String> id;
        Optional<PurchaseState> state;
        Optional<String> token;
        try {
            id = purchases.byKey(order.client(), key);
            state = id.flatMap(purchases::stateOf);
            if (state.isPresent() && List.of(PurchaseState.HELD, PurchaseState.PAYING).contains(state.get())) {
                return answers.inFlight(key);
            }
            token = keys.takeOver(order.client(), key, abandoned.claimedAt());
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "could not resume Idempotency-Key " + key + "; answered 202, ask again", e);
            return answers.unknown(key, Optional.empty());
        }
        if (token.isEmpty()) {
            return answers.inFlight(key);
        }
        if (state.isEmpty() || state.get().leavesNothing()) {
            return runFresh(key, token.get(), order, deadline, progress, reach);
        }
        Optional<Reply> now = now(id.get());
        if (now.isEmpty()) {
            // The key stays in flight with this claim: the key-keeper, or a retry after abandoned-after, settles it.
            return answers.unknown(key, Optional.empty());
        }
        store(key, order.client(), token.get(), now.get());
        return answers.resumed(now.get());
    }

    PurchaseAnswers.Answer runFresh(String key, String token, Order order, Deadline deadline) {
        return runFresh(key, token, order, deadline, PurchaseFlow.Progress.NONE, new Reach());
    }

    private PurchaseAnswers.Answer runFresh(String key, String token, Order order, Deadline deadline, PurchaseFlow.Progress progress,
                                            Reach reach) {
        PurchaseAnswers.Answer answer;
        try {
            PurchaseOutcome outcome = flow.purchase(order, deadline, watched(progress, reach, key));
            if (outcome instanceof PurchaseOutcome.Refused(PurchaseOutcome.Refusal.SoldOut _)) {
                soldOut.soldOut(order.eventId());
            }
            answer = answers.of(outcome);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            // The server is stopping past its grace, and the payment may have left: never "nothing was
            // charged". The key stays in flight; recovery settles the purchase and the key's retry tells it.
            return unknown(order.client(), key);
        } catch (RuntimeException | Error e) {
            if (reach.reserved()) {
                // The flow lets out only what nobody expected (an Error, such as running out of memory),
                // and its payment may have left: 202, and the key stays in flight until recovery has ended it.
                LOG.log(Level.SEVERE, "purchase with Idempotency-Key " + key + " failed after its reservation; answered 202, "
                                      + "it stays for recovery", e);
                return unknown(order.client(), key);
            }
            answer = answers.failed(e);
        }
        Reply reply = answer.reply();
        if (RETRYABLE.contains(reply.status())) {
            try {
                end(key, keys.forget(order.client(), key, token));
            } catch (RuntimeException e) {
                LOG.log(Level.SEVERE, "could not let go of Idempotency-Key " + key + "; it stays in flight", e);
            }
        } else {
            store(key, order.client(), token, reply);
        }
        return answer;
    }

    /** The flow's progress, marking on {@code reach} that the reservation was made before anything else hears of it. */
    private static PurchaseFlow.Progress watched(PurchaseFlow.Progress progress, Reach reach, String key) {
        return new PurchaseFlow.Progress() {
            @Override
            public void reserved() {
                reach.reserved(key);
                progress.reserved();
            }

            @Override
            public void paying() {
                progress.paying();
            }
        };
    }

    /** Stores {@code reply} for the key; if that fails the buyer still gets it, and the key stays in flight. */
    private void store(String key, String client, String token, Reply reply) {
        try {
            end(key, keys.complete(client, key, token, reply));
        } catch (RuntimeException e) {
            // A retry with the key is refused (409) rather than run again: it must not become a second purchase.
            LOG.log(Level.SEVERE, "could not store the answer for Idempotency-Key " + key, e);
        }
    }

    private static void end(String key, IdempotencyKeys.Ending ending) {
        switch (ending) {
            case STORED, LET_GO -> {
            }
            case KEPT -> LOG.info("Idempotency-Key " + key + " stays taken: its purchase still holds seats or a payment; "
                                  + "it is free again once recovery has ended the purchase");
            case LOST -> LOG.warning("Idempotency-Key " + key + " was taken over by a retry while this request still ran; "
                                     + "its answer was not stored and the retry's claim was left alone");
        }
    }

    /**
     * 202 for a purchase whose payment may have left and whose end is not known here (the server
     * stops, a failure nobody expected): the purchase as it stands when it can be read, read with the
     * interrupt cleared (and set again), else "not known yet, ask again".
     */
    private PurchaseAnswers.Answer unknown(String client, String key) {
        boolean interrupted = Thread.interrupted();
        Optional<Reply> now = Optional.empty();
        try {
            Optional<String> id = purchases.byKey(client, key);
            if (id.isPresent()) {
                now = now(id.get());
            }
        } catch (RuntimeException | Error e) {
            // Even an Error here must not turn the answer into a refusal: the 202 below needs no read.
            LOG.log(Level.WARNING, "could not read the purchase of Idempotency-Key " + key, e);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        return answers.unknown(key, now);
    }

    /** The purchase a stored pending answer is about, as it stands now; empty when it names none or cannot be read. */
    private Optional<Reply> now(Reply pending) {
        String location = pending.location();
        return location == null ? Optional.empty() : now(location.substring(location.lastIndexOf('/') + 1));
    }

    /**
     * The purchase's answer as it stands now ({@link PurchaseAnswers#current}); empty when it cannot be
     * read. Its payment may have been taken, so a failed read leaves the caller to answer with what it
     * knows (a stored 202, "ask again"), never with the failure's own problem.
     */
    private Optional<Reply> now(String id) {
        try {
            return purchases.find(id).map(PurchaseAnswers::current);
        } catch (RuntimeException | Error e) {
            LOG.log(Level.WARNING, "could not read purchase " + id + " to tell where it stands; answered with what is known", e);
            return Optional.empty();
        }
    }

    private void cancel(ServerRequest request, ServerResponse response) {
        String id = purchaseId(request);
        answers.of(purchases.cancel(id, Optional.of(Caller.of(request).name())), id).send(response);
    }

    /** The keys this process claims, for tests that run a claimed purchase by hand. */
    IdempotencyKeys keys() {
        return keys;
    }

    /** This process's admission, for tests that check every place came back. */
    Admission admission() {
        return admission;
    }

    /** {@code GET /purchases?state=…}: how many purchases are in the state, and the oldest of them. */
    private void list(ServerRequest request, ServerResponse response) {
        String name = request.query().first("state").orElseThrow(() -> Problem.badRequest("missing-parameter",
                "Name the state: /purchases?state=<" + String.join("|", states()) + ">"));
        if (!states().contains(name)) {
            // Echo a short value only: the detail is read by people, not a place to reflect anything sent.
            String shown = name.length() <= 20 && name.matches("[A-Za-z_]*") ? name : "given";
            throw Problem.badRequest("unknown-state", "There is no state " + shown + "; the states are " + String.join(", ", states()));
        }
        PurchaseState state = PurchaseState.valueOf(name);
        Optional<String> client = only(Caller.of(request));
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("state", state.name());
        body.put("count", purchases.count(state, client).count());
        body.put("items", purchases.list(state, client));
        Reply.json(200, body, null).send(response);
    }

    private static List<String> states() {
        return Arrays.stream(PurchaseState.values()).map(Enum::name).toList();
    }

    private void find(ServerRequest request, ServerResponse response) {
        String id = purchaseId(request);
        // Another client's purchase is answered exactly as one that does not exist.
        PurchaseView view = purchases.find(id, only(Caller.of(request)))
                .orElseThrow(() -> Problem.notFound("unknown-purchase", "There is no purchase " + id));
        Reply.json(200, view, null).send(response);
    }

    /** The purchase id in the path; one that no purchase can have (a NUL, too long) is 404 before any read. */
    private static String purchaseId(ServerRequest request) {
        String id = request.path().pathParameters().get("id");
        if (!Text.storable(id, 36)) {
            throw Problem.notFound("unknown-purchase", "There is no purchase with that id");
        }
        return id;
    }

    /** Whose purchases a caller sees: a client its own, the operator everyone's. */
    private static Optional<String> only(Caller caller) {
        return caller.operator() ? Optional.empty() : Optional.of(caller.name());
    }
}
