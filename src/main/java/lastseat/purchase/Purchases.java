package lastseat.purchase;

import lastseat.checks.Quote;
import lastseat.db.Database;
import lastseat.db.Sql;
import lastseat.inventory.Hold;
import lastseat.inventory.Inventory;
import lastseat.outbox.Outbox;
import lastseat.web.Json;
import lastseat.web.Problem;
import lastseat.work.Timeline;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * The purchase state machine of DESIGN.md, in SQL. Every transition is a compare-and-set
 * ({@code UPDATE purchases ... WHERE id = ? AND state = ?}); zero rows is {@link TransitionRefused},
 * never ignored. Seats move with their purchase in the same transaction, so capacity comes back
 * exactly once (I2) and a confirmation issues tickets and queues its email together.
 *
 * <p>Hazard: every hold must end CONFIRMED, RELEASED, EXPIRED or REFUNDED; a path that returns
 * without one of these transitions leaves seats held until the expiry sweeper finds them.
 */
public final class Purchases {
    static final String CONFIRMATION_EMAIL = "confirmation-email";
    static final String REFUND = "refund";
    static final String REFUND_EMAIL = "refund-email";

    private final Database db;
    private final Inventory inventory;
    private final Clock clock;
    private final Duration settleTime;

    public Purchases(Database db, Inventory inventory, Clock clock, Duration settleTime) {
        this.db = db;
        this.inventory = inventory;
        this.clock = clock;
        this.settleTime = settleTime;
    }

    /**
     * HELD → PAYING, recording the tax: from here on the payment request may leave. Refused
     * ({@link TransitionRefused}) when the purchase is no longer HELD (cancelled, expired) or its
     * hold has expired: a payment must not start for seats that are no longer promised.
     */
    void markPaying(Hold hold, Quote quote) {
        db.inTransaction(c -> {
            OffsetDateTime now = now();
            int rows = Sql.update(c, "UPDATE purchases SET state = 'PAYING', tax = ?, updated_at = ? "
                                     + "WHERE id = ? AND state = 'HELD' AND hold_expires_at > ?",
                                  quote.tax(), now, hold.purchaseId(), now);
            refuseIfNone(rows, hold.purchaseId(), PurchaseState.HELD, PurchaseState.PAYING);
            return null;
        });
    }

    /**
     * Why the purchase could not go on from HELD: a 409 the buyer understands. Expires the hold
     * first when it has run out but nobody has expired it yet, so its seats come back now.
     */
    Problem notPayable(Hold hold) {
        PurchaseState state = db.inTransaction(c -> {
            inventory.expire(c, hold.purchaseId());
            return stateOf(c, hold.purchaseId()).orElseThrow();
        });
        return switch (state) {
            case EXPIRED -> new Problem(409, "hold-expired", "Hold expired",
                    "The hold on " + String.join(", ", hold.seats()) + " expired before the checks ended; nothing was charged");
            case RELEASED -> new Problem(409, "purchase-cancelled", "Purchase cancelled",
                    "Purchase " + hold.purchaseId() + " was cancelled before its payment; nothing was charged");
            default -> new TransitionRefused(hold.purchaseId(), PurchaseState.HELD, PurchaseState.PAYING);
        };
    }

    /**
     * PAYING → CONFIRMED: seats sold, tickets issued, the confirmation email queued, in one
     * transaction. The answer is built from what was written, not read back, so a failing read
     * cannot make a confirmed purchase look pending.
     */
    PurchaseView confirm(Hold hold, Quote quote, String paymentId, Timeline timeline) {
        int step = timeline.start("confirm");
        try {
            List<PurchaseView.Ticket> tickets = db.inTransaction(c -> {
                OffsetDateTime now = now();
                int rows = Sql.update(c, "UPDATE purchases SET state = 'CONFIRMED', payment_id = ?, updated_at = ? "
                                         + "WHERE id = ? AND state = 'PAYING' AND hold_expires_at > ?",
                                      paymentId, now, hold.purchaseId(), now);
                if (rows == 0) {
                    throw stateOf(c, hold.purchaseId()).orElseThrow() == PurchaseState.PAYING
                            ? new HoldExpired(hold.purchaseId())
                            : new TransitionRefused(hold.purchaseId(), PurchaseState.PAYING, PurchaseState.CONFIRMED);
                }
                return sellAndIssue(c, hold, paymentId, timeline, step);
            });
            return PurchaseView.of(hold, quote, PurchaseState.CONFIRMED, tickets);
        } catch (RuntimeException e) {
            timeline.end(step, "failed: " + e.getMessage());
            throw e;
        }
    }

    private List<PurchaseView.Ticket> sellAndIssue(Connection c, Hold hold, String paymentId, Timeline timeline, int step)
            throws SQLException {
        if (!inventory.sell(c, hold.purchaseId(), hold.seats().size())) {
            throw new IllegalStateException("purchase " + hold.purchaseId() + " was paid (" + paymentId
                                            + ") but no longer holds all its seats");
        }
        List<PurchaseView.Ticket> issued = issueTickets(c, hold);
        Outbox.add(c, CONFIRMATION_EMAIL, hold.purchaseId(), confirmationEmail(hold, issued), clock.instant());
        timeline.end(step, "ok");
        saveSteps(c, hold.purchaseId(), timeline);
        return issued;
    }

    /** The guarded confirm found the hold past its expiry: the money came too late for the promise. */
    static final class HoldExpired extends RuntimeException {
        HoldExpired(String purchaseId) {
            super("the hold of purchase " + purchaseId + " expired before its payment was confirmed", null, false, false);
        }
    }

    /**
     * {@code from} → REFUNDED for a captured payment whose purchase cannot be confirmed: its seats
     * come back, and the refund ({@code POST /refunds} with its own key) and the buyer's email are
     * queued in the outbox in the same transaction, so the refund is asked for exactly once, durably.
     */
    void refund(Hold hold, PurchaseState from, String paymentId, String reason, Timeline timeline) {
        int step = timeline.start("refund");
        db.inTransaction(c -> {
            move(c, hold.purchaseId(), from, PurchaseState.REFUNDED, paymentId, reason);
            inventory.giveBack(c, hold.purchaseId());
            Map<String, Object> refund = new LinkedHashMap<>();
            refund.put("purchaseId", hold.purchaseId());
            refund.put("paymentId", paymentId);
            refund.put("amount", amountCharged(c, hold.purchaseId()));
            refund.put("currency", hold.currency());
            Outbox.add(c, REFUND, hold.purchaseId(), Json.text(refund), clock.instant());
            Map<String, Object> email = new LinkedHashMap<>();
            email.put("to", hold.buyerEmail());
            email.put("template", "purchase-refunded");
            email.put("purchaseId", hold.purchaseId());
            email.put("reason", reason);
            Outbox.add(c, REFUND_EMAIL, hold.purchaseId(), Json.text(email), clock.instant());
            timeline.end(step, "queued the refund of " + paymentId);
            saveSteps(c, hold.purchaseId(), timeline);
            return null;
        });
    }

    private static String amountCharged(Connection c, String id) throws SQLException {
        return Sql.list(c, "SELECT amount + COALESCE(tax, 0) FROM purchases WHERE id = ?",
                        rs -> rs.getBigDecimal(1).toPlainString(), id).getFirst();
    }

    /** HELD or PAYING → RELEASED: the seats come back, once. */
    void release(Hold hold, PurchaseState from, String reason, Timeline timeline) {
        int step = timeline.start("release");
        db.inTransaction(c -> {
            move(c, hold.purchaseId(), from, PurchaseState.RELEASED, null, reason);
            int returned = inventory.giveBack(c, hold.purchaseId());
            if (returned != hold.seats().size()) {
                throw new IllegalStateException("purchase " + hold.purchaseId() + " held " + hold.seats().size()
                                                + " seats but " + returned + " came back");
            }
            timeline.end(step, "ok");
            saveSteps(c, hold.purchaseId(), timeline);
            return null;
        });
    }

    /**
     * PAYING → PAYMENT_UNKNOWN: the seats stay held until the provider is asked again, which the
     * reconciler does first after the settle time.
     */
    PurchaseView markUnknown(Hold hold, Quote quote, String reason, Timeline timeline) {
        db.inTransaction(c -> {
            toUnknown(c, hold.purchaseId(), reason);
            saveSteps(c, hold.purchaseId(), timeline);
            return null;
        });
        return PurchaseView.of(hold, quote, PurchaseState.PAYMENT_UNKNOWN, List.of());
    }

    private void toUnknown(Connection c, String id, String reason) throws SQLException {
        move(c, id, PurchaseState.PAYING, PurchaseState.PAYMENT_UNKNOWN, null, reason);
        OffsetDateTime now = now();
        Sql.update(c, "UPDATE purchases SET unknown_since = ?, next_check_at = ?, check_attempts = 0 WHERE id = ?",
                   now, now.plus(settleTime), id);
    }

    /** HELD → RELEASED because the buyer changed their mind; 404 or 409 (naming the state) otherwise. */
    PurchaseView cancel(String id) {
        db.inTransaction(c -> {
            Optional<PurchaseState> state = stateOf(c, id);
            if (state.isEmpty()) {
                throw Problem.notFound("unknown-purchase", "There is no purchase " + id);
            }
            int rows = Sql.update(c, "UPDATE purchases SET state = 'RELEASED', reason = 'cancelled by the buyer', updated_at = ? "
                                     + "WHERE id = ? AND state = 'HELD'", now(), id);
            if (rows == 0) {
                throw new Problem(409, "purchase-not-cancellable", "Purchase cannot be cancelled",
                        "Purchase " + id + " is " + state.get() + (state.get() == PurchaseState.HELD ? " no longer" : "")
                        + "; only a purchase still HELD (before its payment) can be cancelled",
                        Map.of("state", stateOf(c, id).orElseThrow().name()), null, null);
            }
            inventory.giveBack(c, id);
            appendStep(c, id, "cancel", "released by the buyer");
            return null;
        });
        return find(id).orElseThrow();
    }

    // --- for the sweeper ---

    /** Purchases HELD past their expiry, oldest first. */
    List<String> dueToExpire(int limit) {
        return db.read(c -> Sql.list(c, "SELECT id FROM purchases WHERE state = 'HELD' AND hold_expires_at <= ? "
                                        + "ORDER BY hold_expires_at FETCH FIRST " + limit + " ROWS ONLY", rs -> rs.getString(1), now()));
    }

    /** HELD → EXPIRED with the seats back, if nobody moved it first; false otherwise. */
    boolean expire(String id) {
        return db.inTransaction(c -> {
            boolean expired = inventory.expire(c, id);
            if (expired) {
                appendStep(c, id, "expire", "the hold expired; seats released");
            }
            return expired;
        });
    }

    /** Purchases still HELD or PAYING though their last move is older than {@code cutoff}: left by a stopped process. */
    List<String> abandoned(java.time.Instant cutoff, int limit) {
        return db.read(c -> Sql.list(c, "SELECT id FROM purchases WHERE state IN ('HELD', 'PAYING') AND updated_at < ? "
                                        + "ORDER BY updated_at FETCH FIRST " + limit + " ROWS ONLY",
                                     rs -> rs.getString(1), cutoff.atOffset(ZoneOffset.UTC)));
    }

    /**
     * Finishes a purchase a stopped process left, through the same transitions: HELD (no payment can
     * have left) → RELEASED; PAYING (a payment may have left) → PAYMENT_UNKNOWN, for the reconciler.
     * Only while it is still untouched since {@code cutoff}; returns the state it moved to, if any.
     */
    Optional<PurchaseState> recover(String id, java.time.Instant cutoff) {
        OffsetDateTime before = cutoff.atOffset(ZoneOffset.UTC);
        return db.inTransaction(c -> {
            int released = Sql.update(c, "UPDATE purchases SET state = 'RELEASED', updated_at = ?, "
                                         + "reason = 'recovered: the process running it stopped before its payment' "
                                         + "WHERE id = ? AND state = 'HELD' AND updated_at < ?", now(), id, before);
            if (released == 1) {
                inventory.giveBack(c, id);
                appendStep(c, id, "recover", "released: its process stopped before the payment");
                return Optional.of(PurchaseState.RELEASED);
            }
            int unknown = Sql.update(c, "UPDATE purchases SET updated_at = ? WHERE id = ? AND state = 'PAYING' AND updated_at < ?",
                                     now(), id, before);
            if (unknown == 1) {
                toUnknown(c, id, "recovered: its process stopped while the payment may have been sent");
                appendStep(c, id, "recover", "payment unknown: its process stopped during the payment");
                return Optional.of(PurchaseState.PAYMENT_UNKNOWN);
            }
            return Optional.empty();
        });
    }

    // --- for the reconciler ---

    /** A PAYMENT_UNKNOWN purchase due to be asked about, and how often it was asked before. */
    record Unknown(String id, int attempts, java.time.Instant unknownSince, OffsetDateTime nextCheckAt) {
    }

    List<Unknown> dueForCheck(int limit) {
        return db.read(c -> Sql.list(c, "SELECT id, check_attempts, unknown_since, next_check_at FROM purchases "
                                        + "WHERE state = 'PAYMENT_UNKNOWN' AND next_check_at <= ? ORDER BY next_check_at "
                                        + "FETCH FIRST " + limit + " ROWS ONLY",
                                     rs -> new Unknown(rs.getString(1), rs.getInt(2),
                                                       rs.getObject(3, OffsetDateTime.class).toInstant(),
                                                       rs.getObject(4, OffsetDateTime.class)), now()));
    }

    /**
     * Claims a due purchase for one question by moving its next check to {@code until}: a
     * compare-and-set on the time read, so two reconcilers never ask about one purchase at once.
     */
    boolean lease(Unknown due, java.time.Instant until) {
        return db.inTransaction(c -> Sql.update(c, "UPDATE purchases SET next_check_at = ?, check_attempts = check_attempts + 1 "
                                                   + "WHERE id = ? AND state = 'PAYMENT_UNKNOWN' AND next_check_at = ?",
                                                until.atOffset(ZoneOffset.UTC), due.id(), due.nextCheckAt()) == 1);
    }

    /** Moves the next question about a PAYMENT_UNKNOWN purchase to {@code at} (after an unclear answer). */
    void postpone(String id, java.time.Instant at) {
        db.inTransaction(c -> Sql.update(c, "UPDATE purchases SET next_check_at = ? WHERE id = ? AND state = 'PAYMENT_UNKNOWN'",
                                         at.atOffset(ZoneOffset.UTC), id));
    }

    /** Purchases waiting for their payment to be known, and since when the oldest has waited. */
    record UnknownAge(int count, Duration oldest) {
    }

    UnknownAge unknownAge() {
        return db.read(c -> Sql.list(c, "SELECT COUNT(*), MIN(unknown_since) FROM purchases WHERE state = 'PAYMENT_UNKNOWN'",
                                     rs -> {
                                         OffsetDateTime oldest = rs.getObject(2, OffsetDateTime.class);
                                         return new UnknownAge(rs.getInt(1), oldest == null ? Duration.ZERO
                                                 : Duration.between(oldest.toInstant(), clock.instant()));
                                     }).getFirst());
    }

    /** PAYMENT_UNKNOWN → CONFIRMED (the provider captured it), or REFUNDED if its seats are no longer all held. */
    PurchaseState confirmReconciled(String id, String paymentId) {
        Hold hold = db.read(c -> hold(c, id));
        Timeline timeline = new Timeline();
        int step = timeline.start("reconcile");
        try {
            db.inTransaction(c -> {
                move(c, id, PurchaseState.PAYMENT_UNKNOWN, PurchaseState.CONFIRMED, paymentId, "the provider captured " + paymentId);
                return sellAndIssue(c, hold, paymentId, timeline, step);
            });
            return PurchaseState.CONFIRMED;
        } catch (IllegalStateException e) {
            refund(hold, PurchaseState.PAYMENT_UNKNOWN, paymentId, "captured after its seats were gone", timeline);
            return PurchaseState.REFUNDED;
        }
    }

    /** PAYMENT_UNKNOWN → RELEASED: the provider has no payment with its key; the seats come back once. */
    void releaseReconciled(String id) {
        db.inTransaction(c -> {
            move(c, id, PurchaseState.PAYMENT_UNKNOWN, PurchaseState.RELEASED, null, "the provider has no payment with its key");
            inventory.giveBack(c, id);
            appendStep(c, id, "reconcile", "no payment at the provider; seats released");
            return null;
        });
    }

    /** Seats, buyer and money of a purchase, read back for a transition made in the background. */
    private static Hold hold(Connection c, String id) throws SQLException {
        List<String> seats = seats(c, id);
        return Sql.list(c, "SELECT event_id, amount, currency, hold_expires_at, buyer_id, buyer_email, payment_token "
                           + "FROM purchases WHERE id = ?",
                        rs -> new Hold(id, rs.getString(1), seats, rs.getBigDecimal(2), rs.getString(3),
                                       rs.getObject(4, OffsetDateTime.class).toInstant(), rs.getString(5), rs.getString(6),
                                       rs.getString(7)), id).getFirst();
    }

    Optional<PurchaseState> stateOf(String id) {
        return db.read(c -> stateOf(c, id));
    }

    private static Optional<PurchaseState> stateOf(Connection c, String id) throws SQLException {
        return Sql.list(c, "SELECT state FROM purchases WHERE id = ?", rs -> PurchaseState.valueOf(rs.getString(1)), id)
                .stream().findFirst();
    }

    /** The newest purchase made with this Idempotency-Key, if any. */
    Optional<String> byKey(String key) {
        return db.read(c -> Sql.list(c, "SELECT id FROM purchases WHERE idempotency_key = ? ORDER BY created_at DESC "
                                        + "FETCH FIRST 1 ROWS ONLY", rs -> rs.getString(1), key).stream().findFirst());
    }

    private void appendStep(Connection c, String id, String name, String outcome) throws SQLException {
        Timeline timeline = new Timeline();
        timeline.end(timeline.start(name), outcome);
        saveSteps(c, id, timeline);
    }

    public Optional<PurchaseView> find(String id) {
        return db.read(c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT state, event_id, amount, tax, currency, reason, hold_expires_at FROM purchases WHERE id = ?")) {
                ps.setString(1, id);
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
                            rs.getObject(7, OffsetDateTime.class).toInstant().toString(), steps(c, id)));
                }
            }
        });
    }

    private void move(Connection c, String id, PurchaseState from, PurchaseState to, String paymentId, String reason)
            throws SQLException {
        int rows = Sql.update(c, "UPDATE purchases SET state = ?, payment_id = COALESCE(?, payment_id), "
                                 + "reason = COALESCE(?, reason), updated_at = ? WHERE id = ? AND state = ?",
                              to.name(), paymentId, reason == null || reason.length() <= 300 ? reason : reason.substring(0, 300),
                              now(), id, from.name());
        refuseIfNone(rows, id, from, to);
    }

    private static void refuseIfNone(int rows, String id, PurchaseState from, PurchaseState to) {
        if (rows == 0) {
            throw new TransitionRefused(id, from, to);
        }
    }

    private List<PurchaseView.Ticket> issueTickets(Connection c, Hold hold) throws SQLException {
        List<PurchaseView.Ticket> tickets = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO tickets (id, purchase_id, event_id, label, issued_at) VALUES (?, ?, ?, ?, ?)")) {
            for (String seat : hold.seats()) {
                String id = UUID.randomUUID().toString();
                ps.setString(1, id);
                ps.setString(2, hold.purchaseId());
                ps.setString(3, hold.eventId());
                ps.setString(4, seat);
                ps.setObject(5, now());
                ps.addBatch();
                tickets.add(new PurchaseView.Ticket(id, seat));
            }
            ps.executeBatch();
        }
        return tickets;
    }

    private static String confirmationEmail(Hold hold, List<PurchaseView.Ticket> tickets) {
        Map<String, Object> email = new LinkedHashMap<>();
        email.put("to", hold.buyerEmail());
        email.put("template", "purchase-confirmed");
        email.put("purchaseId", hold.purchaseId());
        email.put("eventId", hold.eventId());
        email.put("tickets", tickets);
        return Json.text(email);
    }

    private static void saveSteps(Connection c, String id, Timeline timeline) throws SQLException {
        int seq;
        try (PreparedStatement ps = c.prepareStatement("SELECT COALESCE(MAX(seq), 0) FROM purchase_steps WHERE purchase_id = ?")) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                seq = rs.getInt(1);
            }
        }
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO purchase_steps (purchase_id, seq, step, started_at, ended_at, outcome) VALUES (?, ?, ?, ?, ?, ?)")) {
            for (Timeline.Step step : timeline.steps()) {
                ps.setString(1, id);
                ps.setInt(2, ++seq);
                ps.setString(3, step.name());
                ps.setObject(4, step.startedAt().atOffset(ZoneOffset.UTC));
                ps.setObject(5, step.endedAt() == null ? null : step.endedAt().atOffset(ZoneOffset.UTC));
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
        OffsetDateTime value = rs.getObject(column, OffsetDateTime.class);
        return value == null ? null : value.toInstant().toString();
    }

    private OffsetDateTime now() {
        return clock.instant().atOffset(ZoneOffset.UTC);
    }
}
