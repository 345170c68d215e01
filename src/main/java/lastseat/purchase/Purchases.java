package lastseat.purchase;

import lastseat.checks.Quote;
import lastseat.db.Database;
import lastseat.db.Sql;
import lastseat.db.TimeOrderedId;
import lastseat.inventory.Hold;
import lastseat.inventory.Inventory;
import lastseat.inventory.Order;
import lastseat.outbox.Outbox;
import lastseat.web.Json;
import lastseat.work.Deadline;
import lastseat.work.Timeline;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The one writer of {@code purchases.state}: every change is a row of {@link Transition}, made by
 * {@link #move} as a compare-and-set ({@code UPDATE purchases ... WHERE id = ? AND state = ?}) in
 * the transaction that also does what the row's columns say — seats, tickets, refund, email, the
 * reconciler's schedule, the payment token — and nothing else. Zero rows changed is
 * {@link Moved.Refused}, a value the caller must handle, never ignored; nothing else changes then. A
 * pair of states the table has no row for is {@link Moved.NotAllowed}, and nothing is tried.
 *
 * <p>Hazard: every hold must end CONFIRMED, RELEASED, EXPIRED or REFUNDED (or wait, seats held, in
 * PAYMENT_UNKNOWN / PAYMENT_UNRESOLVED for the provider's answer); a path that returns without one
 * of these transitions leaves seats held until the sweeper's recovery finds them.
 */
public final class Purchases {
    static final String CONFIRMATION_EMAIL = "confirmation-email";
    static final String REFUND = "refund";
    static final String REFUND_EMAIL = "refund-email";
    /** Rows one listing shows at most ({@code GET /purchases?state=}). */
    static final int MAX_LISTED = 100;

    private final Database db;
    private final Inventory inventory;
    private final Clock clock;
    private final Duration holdTtl;
    private final Duration settleTime;

    /** {@code holdTtl}: {@code purchase.hold-ttl}; {@code settleTime}: {@code reconcile.settle-time}. */
    public Purchases(Database db, Inventory inventory, Clock clock, Duration holdTtl, Duration settleTime) {
        this.db = db;
        this.inventory = inventory;
        this.clock = clock;
        this.holdTtl = holdTtl;
        this.settleTime = settleTime;
    }

    /** What one attempted transition did. */
    public sealed interface Moved {
        /** The purchase is now in {@code to}, with every effect of the row; {@code tickets} issued by a confirmation. */
        record Done(PurchaseState to, List<PurchaseView.Ticket> tickets) implements Moved {
        }

        /** It was not in the row's {@code from} state (or its guard failed): nothing changed. */
        record Refused(String id, Transition tried, Optional<PurchaseState> actual) implements Moved {
        }

        /** A move that sells found the seats no longer all held by the purchase: nothing changed. */
        record SeatsGone(String id) implements Moved {
        }

        /** The table has no move from {@code from} to {@code to}: nothing was tried, nothing changed. */
        record NotAllowed(String id, PurchaseState from, PurchaseState to) implements Moved {
        }
    }

    // --- the reservation: a purchase comes to be, HELD ---

    /** What a reservation got: the hold, or the refusal the order earned (nothing claimed). */
    public sealed interface Reservation {
        record Held(Hold hold) implements Reservation {
        }

        record Refused(PurchaseOutcome.Refusal why) implements Reservation {
        }
    }

    /**
     * Step 1 of a purchase, in one transaction: expires the holds past their expiry on the seats the
     * order wants, claims every seat or none, and writes the purchase HELD. A missed seat is a
     * refusal naming the seats taken, or how many are free.
     */
    public Reservation reserve(Order order) {
        return reserve(order, null);
    }

    /**
     * {@link #reserve(Order)} for a request due by {@code deadline}: its waits for a connection and for
     * a seat's row lock end there at the latest ({@link lastseat.db.DatabaseBusy}, nothing claimed).
     */
    public Reservation reserve(Order order, Deadline deadline) {
        String purchaseId = TimeOrderedId.next();
        // Milliseconds: what the database stores and every later read shows, so answers agree byte for byte.
        Instant expiresAt = clock.instant().plus(holdTtl).truncatedTo(ChronoUnit.MILLIS);
        Inventory.Claim claim = db.inTransaction(deadline, c -> {
            for (String expired : inventory.expiredHoldsOn(c, order)) {
                // Refused means somebody else moved it first: its seats are back or never will be, either way not ours to take.
                move(c, Transition.EXPIRE_HOLD, expired, Change.by(clock, "expire", "the hold expired; seats released")
                        .because("the hold expired before the checks ended"));
            }
            Inventory.Claim attempt = inventory.claim(c, order, purchaseId);
            if (attempt instanceof Inventory.Claim.Claimed claimed) {
                insertHeld(c, purchaseId, order, claimed, expiresAt);
            } else {
                c.rollback();
            }
            return attempt;
        });
        return switch (claim) {
            case Inventory.Claim.Claimed claimed -> new Reservation.Held(new Hold(purchaseId, order.eventId(), claimed.labels(),
                    claimed.amount(), claimed.currency(), expiresAt, order.buyerId(), order.buyerEmail(), order.paymentToken()));
            case Inventory.Claim.Missed missed -> new Reservation.Refused(order.namesSeats()
                    ? new PurchaseOutcome.Refusal.SeatsTaken(inventory.taken(order, missed.label(), deadline))
                    : new PurchaseOutcome.Refusal.SoldOut(order.quantity(),
                            inventory.availableUpTo(order.eventId(), order.quantity(), deadline)));
        };
    }

    /**
     * What a read alone (no seat touched, nothing written) says of {@code order} now: why it cannot be
     * had ({@code gone}: its named seats are held or sold, or fewer seats are free than it asks for),
     * and how many seats are free ({@code free}: of a quantity's event, counted up to {@code enough} —
     * a count that stops there; of named seats, how many of those are). It promises nothing about a
     * moment later.
     */
    public record Seen(Optional<PurchaseOutcome.Refusal> gone, int free) {
    }

    /** {@link Seen} for a request due by {@code deadline}: its reads wait for a connection no later than that. */
    public Seen seen(Order order, int enough, Deadline deadline) {
        if (order.namesSeats()) {
            List<String> taken = inventory.taken(order, deadline);
            return taken.isEmpty() ? new Seen(Optional.empty(), order.seats().size())
                    : new Seen(Optional.of(new PurchaseOutcome.Refusal.SeatsTaken(taken)), order.seats().size() - taken.size());
        }
        int free = inventory.availableUpTo(order.eventId(), Math.max(enough, order.quantity()), deadline);
        return new Seen(free < order.quantity() ? Optional.of(new PurchaseOutcome.Refusal.SoldOut(order.quantity(), free))
                                                : Optional.empty(), free);
    }

    private void insertHeld(Connection c, String purchaseId, Order order, Inventory.Claim.Claimed claimed, Instant expiresAt)
            throws SQLException {
        Instant now = clock.instant();
        Sql.update(c, "INSERT INTO purchases (id, event_id, state, client_name, idempotency_key, buyer_id, buyer_email, payment_token, "
                      + "seat_count, amount, currency, hold_expires_at, created_at, updated_at) "
                      + "VALUES (?, ?, 'HELD', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   purchaseId, order.eventId(), order.client(), order.idempotencyKey(), order.buyerId(), order.buyerEmail(),
                   order.paymentToken(), claimed.labels().size(), claimed.amount(), claimed.currency(),
                   expiresAt, now, now);
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO purchase_seats (purchase_id, event_id, label) VALUES (?, ?, ?)")) {
            for (String label : claimed.labels()) {
                ps.setString(1, purchaseId);
                ps.setString(2, order.eventId());
                ps.setString(3, label);
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    // --- the moves ---

    /**
     * HELD → PAYING, recording the tax: from here on the payment request may leave. Refused when the
     * purchase is no longer HELD (cancelled, expired) or its hold has expired: a payment must not
     * start for seats that are no longer promised.
     */
    Moved startPayment(Hold hold, Quote quote) {
        Instant now = clock.instant();
        return db.inTransaction(c -> move(c, Transition.START_PAYMENT, hold.purchaseId(),
                Change.silent().guard(" AND hold_expires_at > ?", now).set("tax = ?", quote.tax())));
    }

    /**
     * {@code from} → CONFIRMED for a captured payment: seats sold, tickets issued, the confirmation
     * email queued, in one transaction. {@link Moved.SeatsGone} when the seats are no longer all held
     * by it (then nothing changed and the caller refunds). The hold's expiry does not matter: seats of
     * a purchase whose payment is open are never expired, so a late capture still gets its seats.
     */
    Moved confirm(String id, PurchaseState from, String paymentId, Timeline timeline, int step) {
        return move(id, from, PurchaseState.CONFIRMED,
                    Change.on(timeline).ending(step).paid(paymentId).because("the provider captured " + paymentId));
    }

    /**
     * {@code from} → REFUNDED for a captured payment whose purchase cannot be confirmed: its seats (if
     * any are still held) come back, and the refund ({@code POST /refunds} with its own key) and the
     * buyer's email are queued in the same transaction, so the refund is asked for exactly once.
     */
    Moved refund(String id, PurchaseState from, String paymentId, String reason, Timeline timeline, int step) {
        return move(id, from, PurchaseState.REFUNDED, Change.on(timeline).ending(step).paid(paymentId).because(reason));
    }

    /** {@code from} → RELEASED: the seats come back, once. Only where nothing was or can be charged. */
    Moved release(String id, PurchaseState from, String reason, Timeline timeline, int step) {
        return move(id, from, PurchaseState.RELEASED, Change.on(timeline).ending(step).because(reason));
    }

    /** {@code from} → {@code to} by the table's row for the pair, in a transaction of its own; none: {@link Moved.NotAllowed}. */
    private Moved move(String id, PurchaseState from, PurchaseState to, Change change) {
        Optional<Transition> row = Transition.between(from, to);
        if (row.isEmpty()) {
            return new Moved.NotAllowed(id, from, to);
        }
        return db.inTransaction(c -> move(c, row.get(), id, change));
    }

    /** PAYING → PAYMENT_UNKNOWN: the seats stay held; the reconciler asks the provider after the settle time. */
    Moved loseAnswer(String id, String reason, Timeline timeline) {
        return db.inTransaction(c -> move(c, Transition.LOSE_ANSWER, id, Change.on(timeline).because(reason)));
    }

    /** What a buyer's cancel did. */
    sealed interface Cancellation {
        /** HELD → RELEASED, seats back. */
        record Cancelled(PurchaseView purchase) implements Cancellation {
        }

        /** There is no such purchase. */
        record Unknown() implements Cancellation {
        }

        /** Only a purchase still HELD (before its payment) can be cancelled; this one is {@code state}. */
        record NotCancellable(PurchaseState state) implements Cancellation {
        }
    }

    /**
     * HELD → RELEASED because the buyer changed their mind; refused, naming the state, otherwise. With
     * {@code client}, only that client's purchase: another's is {@link Cancellation.Unknown}, as if it did not exist.
     */
    Cancellation cancel(String id, Optional<String> client) {
        if (client.isPresent() && !client.equals(clientOf(id))) {
            return new Cancellation.Unknown();
        }
        Moved moved = db.inTransaction(c -> move(c, Transition.RELEASE_HOLD, id,
                Change.by(clock, "cancel", "released by the buyer").because("cancelled by the buyer")));
        if (moved instanceof Moved.Refused refused) {
            return refused.actual().<Cancellation>map(Cancellation.NotCancellable::new).orElseGet(Cancellation.Unknown::new);
        }
        return find(id).<Cancellation>map(view -> new Cancellation.Cancelled(view.withoutTimeline()))
                .orElseGet(Cancellation.Unknown::new);
    }

    /** HELD → EXPIRED with the seats back, if its hold has run out and nobody moved it first. */
    Moved expire(String id) {
        return db.inTransaction(c -> move(c, Transition.EXPIRE_HOLD, id,
                Change.by(clock, "expire", "the hold expired; seats released").because("the hold expired before the checks ended")
                        .guard(" AND hold_expires_at <= ?", clock.instant())));
    }

    /**
     * Finishes a purchase a stopped process left, through the same table: HELD (no payment can have
     * left) → RELEASED; PAYING (a payment may have left) → PAYMENT_UNKNOWN, for the reconciler. Only
     * while it is untouched since {@code cutoff}; returns the state it moved to, if any.
     */
    Optional<PurchaseState> recover(String id, Instant cutoff) {
        Instant before = cutoff;
        return db.inTransaction(c -> {
            Moved released = move(c, Transition.RELEASE_HOLD, id,
                    Change.by(clock, "recover", "released: its process stopped before the payment")
                            .because("recovered: the process running it stopped before its payment")
                            .guard(" AND updated_at < ?", before));
            if (released instanceof Moved.Done) {
                return Optional.of(PurchaseState.RELEASED);
            }
            Moved unknown = move(c, Transition.LOSE_ANSWER, id,
                    Change.by(clock, "recover", "payment unknown: its process stopped during the payment")
                            .because("recovered: its process stopped while the payment may have been sent")
                            .guard(" AND updated_at < ?", before));
            return unknown instanceof Moved.Done ? Optional.of(PurchaseState.PAYMENT_UNKNOWN) : Optional.empty();
        });
    }

    /** PAYMENT_UNKNOWN → PAYMENT_UNRESOLVED: the provider could not be asked for too long; an operator must see it. */
    Moved giveUp(String id, String reason) {
        return db.inTransaction(c -> move(c, Transition.GIVE_UP, id,
                Change.by(clock, "reconcile", "unresolved: " + reason).because("payment unresolved: " + reason)));
    }

    /**
     * Why the purchase could not go on from HELD, as the buyer should hear it. Expires the hold first
     * when it has run out but nobody has expired it yet, so its seats come back now.
     */
    PurchaseOutcome.Refusal notPayable(Hold hold) {
        expire(hold.purchaseId());
        PurchaseState state = stateOf(hold.purchaseId()).orElseThrow();
        return switch (state) {
            case EXPIRED -> new PurchaseOutcome.Refusal.HoldExpired(hold.seats());
            case RELEASED -> new PurchaseOutcome.Refusal.Cancelled(hold.purchaseId());
            default -> new PurchaseOutcome.Refusal.StateChanged(hold.purchaseId(), state);
        };
    }

    /**
     * One row of the table, in the caller's transaction: the compare-and-set on the state (and the
     * change's guard), then the row's columns in order — payment token, seats, tickets, refund, email,
     * check — then the timeline. The Key column writes nothing: it is the rule
     * {@link PurchaseState#leavesNothing()} reads. A refused move changes nothing; a sale that finds the
     * seats gone is rolled back.
     */
    private Moved move(Connection c, Transition row, String id, Change change) throws SQLException {
        Instant now = clock.instant();
        List<Object> args = new ArrayList<>(List.of(row.to().name(), now));
        args.addAll(change.setArgs);
        args.addAll(List.of(id, row.from().name()));
        args.addAll(change.guardArgs);
        String token = switch (row.token()) {
            case KEEP -> "";
            case DROP -> ", payment_token = NULL";
        };
        int rows = Sql.update(c, "UPDATE purchases SET state = ?, updated_at = ?" + token + change.sets()
                                 + " WHERE id = ? AND state = ?" + change.guard, args.toArray());
        if (rows == 0) {
            return new Moved.Refused(id, row, stateOf(c, id));
        }
        switch (row.seats()) {
            case KEEP -> {
            }
            case SELL -> {
                if (!inventory.sell(c, id, seatCount(c, id))) {
                    c.rollback();
                    return new Moved.SeatsGone(id);
                }
            }
            case GIVE_BACK -> inventory.giveBack(c, id);
        }
        // One read serves tickets, refund and email alike; a row that writes none of them skips it.
        Hold hold = row.tickets() == Transition.Tickets.NONE && row.refund() == Transition.Refund.NONE
                    && row.email() == Transition.Email.NONE ? null : hold(c, id);
        List<PurchaseView.Ticket> tickets = switch (row.tickets()) {
            case NONE -> List.of();
            case ISSUE -> issueTickets(c, hold);
        };
        switch (row.refund()) {
            case NONE -> {
            }
            case QUEUE -> queueRefund(c, hold, change.paymentId);
        }
        switch (row.email()) {
            case NONE -> {
            }
            case CONFIRMATION -> queueConfirmation(c, hold, tickets);
            case REFUND_NOTICE -> queueRefundNotice(c, hold, change.reason);
        }
        switch (row.check()) {
            case NONE -> {
            }
            case SCHEDULE -> Sql.update(c, "UPDATE purchases SET unknown_since = ?, next_check_at = ?, check_attempts = 0 "
                                           + "WHERE id = ?", now, now.plus(settleTime), id);
        }
        if (change.timeline != null) {
            if (change.endingStep >= 0) {
                change.timeline.end(change.endingStep, "ok");
            }
            saveSteps(c, id, change.timeline);
        }
        return new Moved.Done(row.to(), tickets);
    }

    /**
     * What a move writes besides the state: the reason and payment shown to clients, columns of its
     * own, a guard beyond the state, and the timeline steps that explain it.
     */
    private static final class Change {
        private final Timeline timeline;
        private String reason;
        private String paymentId;
        private final List<String> sets = new ArrayList<>();
        private final List<Object> setArgs = new ArrayList<>();
        private String guard = "";
        private final List<Object> guardArgs = new ArrayList<>();
        private int endingStep = -1;

        private Change(Timeline timeline) {
            this.timeline = timeline;
        }

        /** The purchase's own timeline (the flow's), saved with the move. */
        static Change on(Timeline timeline) {
            return new Change(timeline);
        }

        /** A move made in the background: one step named {@code step}, ended at once with {@code outcome}. */
        static Change by(Clock clock, String step, String outcome) {
            Timeline timeline = new Timeline(clock);
            timeline.end(timeline.start(step), outcome);
            return new Change(timeline);
        }

        static Change silent() {
            return new Change(null);
        }

        Change because(String why) {
            this.reason = why == null || why.length() <= 300 ? why : why.substring(0, 300);
            return set("reason = ?", this.reason);
        }

        Change paid(String payment) {
            this.paymentId = payment;
            return set("payment_id = ?", payment);
        }

        Change set(String assignment, Object value) {
            sets.add(assignment);
            setArgs.add(value);
            return this;
        }

        Change guard(String condition, Object value) {
            guard += condition;
            guardArgs.add(value);
            return this;
        }

        String sets() {
            return sets.stream().map(s -> ", " + s).collect(Collectors.joining());
        }

        /** The timeline's step {@code index} ends "ok" with the move, so the saved timeline shows it done. */
        Change ending(int index) {
            this.endingStep = index;
            return this;
        }
    }

    private static int seatCount(Connection c, String id) throws SQLException {
        return Sql.list(c, "SELECT seat_count FROM purchases WHERE id = ?", rs -> rs.getInt(1), id).getFirst();
    }

    /** A ticket for every seat of a purchase just sold. */
    private List<PurchaseView.Ticket> issueTickets(Connection c, Hold hold) throws SQLException {
        String id = hold.purchaseId();
        List<PurchaseView.Ticket> tickets = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO tickets (id, purchase_id, event_id, label, issued_at) VALUES (?, ?, ?, ?, ?)")) {
            for (String seat : hold.seats()) {
                String ticket = TimeOrderedId.next();
                ps.setString(1, ticket);
                ps.setString(2, id);
                ps.setString(3, hold.eventId());
                ps.setString(4, seat);
                Sql.set(ps, 5, clock.instant());
                ps.addBatch();
                tickets.add(new PurchaseView.Ticket(ticket, seat));
            }
            ps.executeBatch();
        }
        return List.copyOf(tickets);
    }

    /** The buyer's confirmation email with its {@code tickets}. */
    private void queueConfirmation(Connection c, Hold hold, List<PurchaseView.Ticket> tickets) throws SQLException {
        Map<String, Object> email = new LinkedHashMap<>();
        email.put("to", hold.buyerEmail());
        email.put("template", "purchase-confirmed");
        email.put("purchaseId", hold.purchaseId());
        email.put("eventId", hold.eventId());
        email.put("tickets", tickets);
        Outbox.add(c, CONFIRMATION_EMAIL, hold.purchaseId(), Json.text(email), clock.instant());
    }

    /** The refund of {@code paymentId}, the whole amount charged (tax included). */
    private void queueRefund(Connection c, Hold hold, String paymentId) throws SQLException {
        String id = hold.purchaseId();
        Map<String, Object> refund = new LinkedHashMap<>();
        refund.put("purchaseId", id);
        refund.put("paymentId", paymentId);
        refund.put("amount", Sql.list(c, "SELECT amount + COALESCE(tax, 0) FROM purchases WHERE id = ?",
                                      rs -> rs.getBigDecimal(1).toPlainString(), id).getFirst());
        refund.put("currency", hold.currency());
        Outbox.add(c, REFUND, id, Json.text(refund), clock.instant());
    }

    /** The buyer's email saying the payment is being refunded, and {@code reason}. */
    private void queueRefundNotice(Connection c, Hold hold, String reason) throws SQLException {
        Map<String, Object> email = new LinkedHashMap<>();
        email.put("to", hold.buyerEmail());
        email.put("template", "purchase-refunded");
        email.put("purchaseId", hold.purchaseId());
        email.put("reason", reason);
        Outbox.add(c, REFUND_EMAIL, hold.purchaseId(), Json.text(email), clock.instant());
    }

    // --- for the sweeper ---

    /** Purchases HELD past their expiry, oldest first. */
    List<String> dueToExpire(int limit) {
        return db.read(c -> Sql.list(c, "SELECT id FROM purchases WHERE state = 'HELD' AND hold_expires_at <= ? "
                                        + "ORDER BY hold_expires_at FETCH FIRST " + limit + " ROWS ONLY", rs -> rs.getString(1), clock.instant()));
    }

    /** Purchases still HELD or PAYING though their last move is older than {@code cutoff}: left by a stopped process. */
    List<String> abandoned(Instant cutoff, int limit) {
        return db.read(c -> Sql.list(c, "SELECT id FROM purchases WHERE state IN ('HELD', 'PAYING') AND updated_at < ? "
                                        + "ORDER BY updated_at FETCH FIRST " + limit + " ROWS ONLY",
                                     rs -> rs.getString(1), cutoff));
    }

    // --- for the reconciler ---

    /** A purchase whose payment is open, due to be asked about, and how often it was asked before. */
    record Open(String id, PurchaseState state, int attempts, Instant unknownSince, OffsetDateTime nextCheckAt) {
    }

    /** PAYMENT_UNKNOWN and PAYMENT_UNRESOLVED purchases due for a question, oldest due first. */
    List<Open> dueForCheck(int limit) {
        // unknown_since is written with the move to PAYMENT_UNKNOWN; a row changed by hand may lack it.
        return db.read(c -> Sql.list(c, "SELECT id, state, check_attempts, COALESCE(unknown_since, updated_at), next_check_at FROM purchases "
                                        + "WHERE state IN ('PAYMENT_UNKNOWN', 'PAYMENT_UNRESOLVED') AND next_check_at <= ? "
                                        + "ORDER BY next_check_at FETCH FIRST " + limit + " ROWS ONLY",
                                     rs -> new Open(rs.getString(1), PurchaseState.valueOf(rs.getString(2)), rs.getInt(3),
                                                    Sql.instant(rs, 4),
                                                    rs.getObject(5, OffsetDateTime.class)), clock.instant()));
    }

    /**
     * Claims a due purchase for one question by moving its next check to {@code until}: a
     * compare-and-set on the time read, so two reconcilers never ask about one purchase at once.
     */
    boolean lease(Open due, Instant until) {
        return db.inTransaction(c -> Sql.update(c, "UPDATE purchases SET next_check_at = ?, check_attempts = check_attempts + 1 "
                                                   + "WHERE id = ? AND state = ? AND next_check_at = ?",
                                                until, due.id(), due.state().name(), due.nextCheckAt()) == 1);
    }

    /** Moves the next question about an open payment to {@code at} (after an unclear answer). */
    void postpone(String id, Instant at) {
        db.inTransaction(c -> Sql.update(c, "UPDATE purchases SET next_check_at = ? WHERE id = ? "
                                            + "AND state IN ('PAYMENT_UNKNOWN', 'PAYMENT_UNRESOLVED')",
                                         at, id));
    }

    /**
     * What the reconciler sends when it asks the provider to settle the charge: the same as the flow sent.
     * {@code paymentToken} is null once the purchase has ended (another instance settled it meanwhile).
     */
    record Charged(String purchaseId, BigDecimal total, String currency, String paymentToken) {
    }

    Charged charged(String id) {
        return db.read(c -> Sql.list(c, "SELECT amount + COALESCE(tax, 0), currency, payment_token FROM purchases WHERE id = ?",
                                     rs -> new Charged(id, rs.getBigDecimal(1), rs.getString(2), rs.getString(3)), id).getFirst());
    }

    /** Purchases in {@code state}: how many, and since when the oldest has been there. */
    record Count(int count, Duration oldest) {
    }

    Count count(PurchaseState state) {
        return count(state, Optional.empty());
    }

    /** As {@link #count(PurchaseState)}, of {@code client}'s purchases only when given. */
    Count count(PurchaseState state, Optional<String> client) {
        String since = state.paymentOpen() ? "unknown_since" : "updated_at";
        return db.read(c -> Sql.list(c, "SELECT COUNT(*), MIN(" + since + ") FROM purchases WHERE state = ?"
                                        + (client.isPresent() ? " AND client_name = ?" : ""),
                                     rs -> {
                                         OffsetDateTime oldest = rs.getObject(2, OffsetDateTime.class);
                                         return new Count(rs.getInt(1), oldest == null ? Duration.ZERO
                                                 : Duration.between(oldest.toInstant(), clock.instant()));
                                     }, client.map(name -> new Object[] {state.name(), name}).orElse(new Object[] {state.name()}))
                .getFirst());
    }

    /** The client that made the purchase; empty when there is no such purchase. */
    Optional<String> clientOf(String id) {
        return db.read(c -> Sql.list(c, "SELECT client_name FROM purchases WHERE id = ?", rs -> rs.getString(1), id).stream().findFirst());
    }

    /** One purchase as an operator's list shows it. */
    public record Listed(String id, String state, String eventId, String since, long ageSeconds, String reason) {
    }

    /** Purchases in {@code state} ({@code client}'s only, when given), oldest first, at most {@value #MAX_LISTED}. */
    public List<Listed> list(PurchaseState state, Optional<String> client) {
        String since = state.paymentOpen() ? "COALESCE(unknown_since, updated_at)" : "updated_at";
        Instant now = clock.instant();
        return db.read(c -> Sql.list(c, "SELECT id, state, event_id, " + since + " AS since, reason FROM purchases WHERE state = ? "
                                        + (client.isPresent() ? "AND client_name = ? " : "")
                                        + "ORDER BY since, id FETCH FIRST " + MAX_LISTED + " ROWS ONLY",
                                     rs -> {
                                         Instant at = Sql.instant(rs, 4);
                                         return new Listed(rs.getString(1), rs.getString(2), rs.getString(3), at.toString(),
                                                           Duration.between(at, now).toSeconds(), rs.getString(5));
                                     }, client.map(name -> new Object[] {state.name(), name}).orElse(new Object[] {state.name()})));
    }

    // --- reads ---

    /** Seats, buyer and money of a purchase, read in the transaction that moves it. */
    private static Hold hold(Connection c, String id) throws SQLException {
        List<String> seats = seats(c, id);
        return Sql.list(c, "SELECT event_id, amount, currency, hold_expires_at, buyer_id, buyer_email, payment_token "
                           + "FROM purchases WHERE id = ?",
                        rs -> new Hold(id, rs.getString(1), seats, rs.getBigDecimal(2), rs.getString(3),
                                       Sql.instant(rs, 4), rs.getString(5), rs.getString(6),
                                       rs.getString(7)), id).getFirst();
    }

    Optional<PurchaseState> stateOf(String id) {
        return db.read(c -> stateOf(c, id));
    }

    private static Optional<PurchaseState> stateOf(Connection c, String id) throws SQLException {
        return Sql.list(c, "SELECT state FROM purchases WHERE id = ?", rs -> PurchaseState.valueOf(rs.getString(1)), id)
                .stream().findFirst();
    }

    /** The newest purchase {@code client} made with this Idempotency-Key, if any. */
    Optional<String> byKey(String client, String key) {
        return db.read(c -> Sql.list(c, "SELECT id FROM purchases WHERE client_name = ? AND idempotency_key = ? "
                                        + "ORDER BY created_at DESC FETCH FIRST 1 ROWS ONLY", rs -> rs.getString(1), client, key)
                .stream().findFirst());
    }

    public Optional<PurchaseView> find(String id) {
        return find(id, Optional.empty());
    }

    /** The purchase, if it exists and, when {@code client} is given, that client made it (else empty: as if it did not exist). */
    public Optional<PurchaseView> find(String id, Optional<String> client) {
        return db.read(c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT state, event_id, amount, tax, currency, reason, hold_expires_at FROM purchases WHERE id = ?"
                    + (client.isPresent() ? " AND client_name = ?" : ""))) {
                ps.setString(1, id);
                if (client.isPresent()) {
                    ps.setString(2, client.get());
                }
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    BigDecimal amount = rs.getBigDecimal(3);
                    BigDecimal tax = rs.getBigDecimal(4);
                    return Optional.of(new PurchaseView(id, rs.getString(1), rs.getString(2), seats(c, id),
                            amount.toPlainString(), tax == null ? null : tax.toPlainString(),
                            tax == null ? null : amount.add(tax).toPlainString(), rs.getString(5),
                            tickets(c, id), rs.getString(6),
                            Sql.instant(rs, 7).toString(), steps(c, id)));
                }
            }
        });
    }

    private static void saveSteps(Connection c, String id, Timeline timeline) throws SQLException {
        int seq = Sql.list(c, "SELECT COALESCE(MAX(seq), 0) FROM purchase_steps WHERE purchase_id = ?", rs -> rs.getInt(1), id)
                .getFirst();
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO purchase_steps (purchase_id, seq, step, started_at, ended_at, outcome) VALUES (?, ?, ?, ?, ?, ?)")) {
            for (Timeline.Step step : timeline.steps()) {
                ps.setString(1, id);
                ps.setInt(2, ++seq);
                ps.setString(3, step.name());
                Sql.set(ps, 4, step.startedAt());
                Sql.set(ps, 5, step.endedAt());
                ps.setString(6, step.outcome());
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    private static List<String> seats(Connection c, String id) throws SQLException {
        return Sql.list(c, "SELECT ps.label FROM purchase_seats ps JOIN seats s ON s.event_id = ps.event_id AND s.label = ps.label "
                           + "WHERE ps.purchase_id = ? ORDER BY s.position", rs -> rs.getString(1), id);
    }

    private static List<PurchaseView.Ticket> tickets(Connection c, String id) throws SQLException {
        return Sql.list(c, "SELECT t.id, t.label FROM tickets t JOIN seats s ON s.event_id = t.event_id AND s.label = t.label "
                           + "WHERE t.purchase_id = ? ORDER BY s.position",
                        rs -> new PurchaseView.Ticket(rs.getString(1), rs.getString(2)), id);
    }

    private static List<PurchaseView.Step> steps(Connection c, String id) throws SQLException {
        return Sql.list(c, "SELECT step, started_at, ended_at, outcome FROM purchase_steps WHERE purchase_id = ? ORDER BY seq",
                        rs -> new PurchaseView.Step(rs.getString(1), instant(rs, 2), instant(rs, 3), rs.getString(4)), id);
    }

    private static String instant(ResultSet rs, int column) throws SQLException {
        Instant value = Sql.instant(rs, column);
        return value == null ? null : value.toString();
    }

}
