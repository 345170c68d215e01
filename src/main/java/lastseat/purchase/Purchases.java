package lastseat.purchase;

import lastseat.checks.Quote;
import lastseat.db.Database;
import lastseat.db.Sql;
import lastseat.inventory.Hold;
import lastseat.inventory.Inventory;
import lastseat.outbox.Outbox;
import lastseat.web.Json;
import lastseat.work.Timeline;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
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

    private final Database db;
    private final Inventory inventory;
    private final Clock clock;

    public Purchases(Database db, Inventory inventory, Clock clock) {
        this.db = db;
        this.inventory = inventory;
        this.clock = clock;
    }

    /** HELD → PAYING, recording the tax: from here on the payment request may leave. */
    void markPaying(Hold hold, Quote quote) {
        db.inTransaction(c -> {
            int rows = Sql.update(c, "UPDATE purchases SET state = 'PAYING', tax = ?, updated_at = ? WHERE id = ? AND state = 'HELD'",
                                  quote.tax(), now(), hold.purchaseId());
            refuseIfNone(rows, hold.purchaseId(), PurchaseState.HELD, PurchaseState.PAYING);
            return null;
        });
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
                move(c, hold.purchaseId(), PurchaseState.PAYING, PurchaseState.CONFIRMED, paymentId, null);
                if (!inventory.sell(c, hold.purchaseId(), hold.seats().size())) {
                    throw new IllegalStateException("purchase " + hold.purchaseId() + " is PAYING but no longer holds all its seats");
                }
                List<PurchaseView.Ticket> issued = issueTickets(c, hold);
                Outbox.add(c, CONFIRMATION_EMAIL, hold.purchaseId(), confirmationEmail(hold, issued), clock.instant());
                timeline.end(step, "ok");
                saveSteps(c, hold.purchaseId(), timeline);
                return issued;
            });
            return PurchaseView.of(hold, quote, PurchaseState.CONFIRMED, tickets);
        } catch (RuntimeException e) {
            timeline.end(step, "failed: " + e.getMessage());
            throw e;
        }
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

    /** PAYING → PAYMENT_UNKNOWN: the seats stay held until the provider is asked again. */
    PurchaseView markUnknown(Hold hold, Quote quote, String reason, Timeline timeline) {
        db.inTransaction(c -> {
            move(c, hold.purchaseId(), PurchaseState.PAYING, PurchaseState.PAYMENT_UNKNOWN, null, reason);
            saveSteps(c, hold.purchaseId(), timeline);
            return null;
        });
        return PurchaseView.of(hold, quote, PurchaseState.PAYMENT_UNKNOWN, List.of());
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
