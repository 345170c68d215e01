package lastseat.drill;

import lastseat.db.Database;
import lastseat.db.Sql;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The database side of invariants I1, I2 and I4 for one event, read in one transaction, as a list
 * of violations (empty when they hold) plus the purchases, so a drill can check I3 against the
 * provider's journal. The list of purchases is capped at {@value #MAX_PURCHASES}.
 */
final class InvariantCheck {
    static final int MAX_PURCHASES = 20_000;
    private final Database db;
    private final Clock clock;
    private final java.time.Duration sweepGrace;
    private final java.time.Duration recoveredWithin;

    /**
     * {@code sweepGrace}: how long past its expiry a HELD purchase may wait for the sweeper;
     * {@code recoveredWithin}: how long a purchase may stay HELD or PAYING before recovery must have
     * moved it ({@code LastseatConfig.recoveredWithin}).
     */
    InvariantCheck(Database db, Clock clock, java.time.Duration sweepGrace, java.time.Duration recoveredWithin) {
        this.db = db;
        this.clock = clock;
        this.sweepGrace = sweepGrace;
        this.recoveredWithin = recoveredWithin;
    }

    record PurchaseRow(String id, String state, int seats, String idempotencyKey, String paymentId) {
    }

    record Result(String eventId, int capacity, int available, int held, int sold, Map<String, Integer> purchasesByState,
                  List<String> violations, List<PurchaseRow> purchases, boolean truncated) {
        public boolean ok() {
            return violations.isEmpty();
        }
    }

    /** Empty when there is no such event. */
    java.util.Optional<Result> check(String eventId) {
        Instant now = clock.instant();
        return db.snapshot(c -> {
            List<Integer> capacity = Sql.list(c, "SELECT capacity FROM events WHERE id = ?", rs -> rs.getInt(1), eventId);
            if (capacity.isEmpty()) {
                return java.util.Optional.empty();
            }
            Map<String, Integer> seats = counts(c, "SELECT state, COUNT(*) FROM seats WHERE event_id = ? GROUP BY state", eventId);
            int available = seats.getOrDefault("AVAILABLE", 0);
            int held = seats.getOrDefault("HELD", 0);
            int sold = seats.getOrDefault("SOLD", 0);
            List<String> violations = new ArrayList<>();
            if (available + held + sold != capacity.getFirst()) {
                violations.add("I2: available " + available + " + held " + held + " + sold " + sold + " is not the capacity " + capacity.getFirst());
            }
            violated(c, violations, "I1: seats with more than one ticket",
                     "SELECT label FROM tickets WHERE event_id = ? GROUP BY label HAVING COUNT(*) > 1", eventId);
            violated(c, violations, "I1: sold seats whose purchase is not CONFIRMED",
                     "SELECT s.label FROM seats s LEFT JOIN purchases p ON p.id = s.purchase_id "
                     + "WHERE s.event_id = ? AND s.state = 'SOLD' AND (p.state IS NULL OR p.state <> 'CONFIRMED')", eventId);
            violated(c, violations, "I1: sold seats without a ticket of their purchase",
                     "SELECT s.label FROM seats s LEFT JOIN tickets t ON t.event_id = s.event_id AND t.label = s.label "
                     + "AND t.purchase_id = s.purchase_id WHERE s.event_id = ? AND s.state = 'SOLD' AND t.id IS NULL", eventId);
            violated(c, violations, "I1: tickets on seats that are not sold to their purchase",
                     "SELECT t.label FROM tickets t JOIN seats s ON s.event_id = t.event_id AND s.label = t.label "
                     + "WHERE t.event_id = ? AND (s.state <> 'SOLD' OR s.purchase_id <> t.purchase_id)", eventId);
            violated(c, violations, "held seats whose purchase is not open",
                     "SELECT s.label FROM seats s LEFT JOIN purchases p ON p.id = s.purchase_id WHERE s.event_id = ? "
                     + "AND s.state = 'HELD' AND (p.state IS NULL OR p.state NOT IN ('HELD', 'PAYING', 'PAYMENT_UNKNOWN', 'PAYMENT_UNRESOLVED'))", eventId);
            violated(c, violations, "open purchases that do not hold all their seats",
                     "SELECT p.id FROM purchases p WHERE p.event_id = ? AND p.state IN ('HELD', 'PAYING', 'PAYMENT_UNKNOWN', 'PAYMENT_UNRESOLVED') "
                     + "AND p.seat_count <> (SELECT COUNT(*) FROM seats s WHERE s.purchase_id = p.id AND s.state = 'HELD')", eventId);
            violated(c, violations, "I4: holds left past their expiry (the sweeper's grace included)",
                     "SELECT id FROM purchases WHERE event_id = ? AND state = 'HELD' AND hold_expires_at < ?",
                     eventId, now.minus(sweepGrace));
            violated(c, violations, "I4: purchases still HELD or PAYING after their deadline and recovery's grace",
                     "SELECT id FROM purchases WHERE event_id = ? AND state IN ('HELD', 'PAYING') AND updated_at < ?",
                     eventId, now.minus(recoveredWithin));
            List<PurchaseRow> purchases = Sql.list(c, "SELECT id, state, seat_count, idempotency_key, payment_id FROM purchases "
                                                      + "WHERE event_id = ? ORDER BY created_at, id FETCH FIRST " + (MAX_PURCHASES + 1)
                                                      + " ROWS ONLY",
                                                   rs -> new PurchaseRow(rs.getString(1), rs.getString(2), rs.getInt(3), rs.getString(4),
                                                                         rs.getString(5)), eventId);
            boolean truncated = purchases.size() > MAX_PURCHASES;
            return java.util.Optional.of(new Result(eventId, capacity.getFirst(), available, held, sold,
                    counts(c, "SELECT state, COUNT(*) FROM purchases WHERE event_id = ? GROUP BY state", eventId),
                    violations, truncated ? purchases.subList(0, MAX_PURCHASES) : purchases, truncated));
        });
    }

    private static void violated(Connection c, List<String> violations, String what, String sql, Object... args) throws SQLException {
        List<String> found = Sql.list(c, sql + " FETCH FIRST 11 ROWS ONLY", rs -> rs.getString(1), args);
        if (!found.isEmpty()) {
            violations.add(what + ": " + String.join(", ", found.subList(0, Math.min(10, found.size())))
                           + (found.size() > 10 ? ", ..." : ""));
        }
    }

    private static Map<String, Integer> counts(Connection c, String sql, String eventId) throws SQLException {
        Map<String, Integer> counts = new TreeMap<>();
        for (var row : Sql.list(c, sql, rs -> Map.entry(rs.getString(1), rs.getInt(2)), eventId)) {
            counts.put(row.getKey(), row.getValue());
        }
        return counts;
    }
}
