package lastseat.outbox;

import lastseat.db.Database;
import lastseat.db.Sql;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * What the outbox holds, for operators ({@code GET /outbox}) and the gauges
 * ({@code lastseat.outbox.dead}, {@code lastseat.outbox.pending}). Read-only; the payload is never
 * returned because it carries the buyer's email address.
 *
 * <p>Order: PENDING rows next-due first (what the worker does next), SENT and DEAD rows newest first.
 */
public final class OutboxQuery {
    public static final Set<String> STATES = Set.of("PENDING", "SENT", "DEAD");

    private OutboxQuery() {
    }

    /** One outbox row without its payload; {@code nextAttemptAt} is null unless the row is PENDING. */
    public record Row(String id, String kind, String purchaseId, String idempotencyKey, String state, int attempts,
                      String lastError, Instant createdAt, Instant nextAttemptAt, Instant sentAt) {
    }

    /** The kinds of row: the confirmation and the refund notice (emails), and a refund owed to a buyer. */
    public static final Set<String> KINDS = Set.of("confirmation-email", "refund-email", "refund");

    /** At most {@code limit} rows in {@code state} (PENDING, SENT or DEAD, any case), of every kind. */
    public static List<Row> list(Database db, String state, int limit) {
        return list(db, state, Optional.empty(), 0, limit);
    }

    /**
     * At most {@code limit} rows in {@code state} of {@code kind} (every kind when empty), after
     * skipping {@code offset} of them: with {@link #count} an operator pages through every row, so no
     * dead refund can drop off the end of a list.
     */
    public static List<Row> list(Database db, String state, Optional<String> kind, int offset, int limit) {
        String checked = checked(state);
        String order = "PENDING".equals(checked) ? "next_attempt_at, id" : "created_at DESC, id";
        Optional<String> ofKind = kind.map(OutboxQuery::checkedKind);
        String where = ofKind.isPresent() ? "state = ? AND kind = ?" : "state = ?";
        Object[] args = ofKind.isPresent() ? new Object[] {checked, ofKind.get(), Math.max(0, offset), Math.max(0, limit)}
                                           : new Object[] {checked, Math.max(0, offset), Math.max(0, limit)};
        return db.read(c -> Sql.list(c, "SELECT id, kind, purchase_id, dedupe_key, state, attempts, last_error, created_at, "
                                        + "next_attempt_at, sent_at FROM outbox WHERE " + where + " ORDER BY "
                                        + order + " OFFSET ? ROWS FETCH FIRST ? ROWS ONLY", OutboxQuery::row, args));
    }

    /**
     * At most {@code limit} DEAD rows, refunds (money owed to a buyer) first and then the rest, each newest
     * first: what an operator must see first, in one read.
     */
    public static List<Row> deadRefundsFirst(Database db, int limit) {
        return db.read(c -> Sql.list(c, "SELECT id, kind, purchase_id, dedupe_key, state, attempts, last_error, created_at, "
                                        + "next_attempt_at, sent_at FROM outbox WHERE state = 'DEAD' "
                                        + "ORDER BY CASE WHEN kind = 'refund' THEN 0 ELSE 1 END, created_at DESC, id "
                                        + "FETCH FIRST ? ROWS ONLY", OutboxQuery::row, Math.max(0, limit)));
    }

    /** How many rows are in {@code state} (PENDING, SENT or DEAD, any case). */
    public static int count(Database db, String state) {
        return count(db, state, Optional.empty());
    }

    /** How many rows are in {@code state} of {@code kind} (every kind when empty). */
    public static int count(Database db, String state, Optional<String> kind) {
        String checked = checked(state);
        Optional<String> ofKind = kind.map(OutboxQuery::checkedKind);
        return ofKind.isPresent()
                ? db.read(c -> Sql.list(c, "SELECT COUNT(*) FROM outbox WHERE state = ? AND kind = ?", rs -> rs.getInt(1),
                                        checked, ofKind.get())).getFirst()
                : db.read(c -> Sql.list(c, "SELECT COUNT(*) FROM outbox WHERE state = ?", rs -> rs.getInt(1), checked)).getFirst();
    }

    /** The row with this id, whatever its state. */
    static Optional<Row> byId(Database db, String id) {
        return db.read(c -> Sql.list(c, "SELECT id, kind, purchase_id, dedupe_key, state, attempts, last_error, created_at, "
                                        + "next_attempt_at, sent_at FROM outbox WHERE id = ?", OutboxQuery::row, id))
                .stream().findFirst();
    }

    /** DEAD refunds: money owed to buyers that nobody is sending (for the gauge; NaN when the database cannot say). */
    public static double deadRefunds(Database db) {
        try {
            return db.read(c -> Sql.list(c, "SELECT COUNT(*) FROM outbox WHERE state = 'DEAD' AND kind = 'refund'",
                                         rs -> rs.getInt(1))).getFirst();
        } catch (RuntimeException e) {
            return Double.NaN;
        }
    }

    /** The row with this dedupe key, whatever its state. */
    static Optional<Row> find(Database db, String dedupeKey) {
        return db.read(c -> Sql.list(c, "SELECT id, kind, purchase_id, dedupe_key, state, attempts, last_error, created_at, "
                                        + "next_attempt_at, sent_at FROM outbox WHERE dedupe_key = ?", OutboxQuery::row, dedupeKey))
                .stream().findFirst();
    }

    /**
     * {@link #count} for a gauge: NaN when the database cannot be asked, so that a metrics scrape
     * during a database outage still answers (and the health check says why).
     */
    public static double gauge(Database db, String state) {
        try {
            return count(db, state);
        } catch (RuntimeException e) {
            return Double.NaN;
        }
    }

    static String checked(String state) {
        String upper = state == null ? "" : state.toUpperCase(Locale.ROOT);
        if (!STATES.contains(upper)) {
            throw new IllegalArgumentException("outbox state must be PENDING, SENT or DEAD, got '" + state + "'");
        }
        return upper;
    }

    static String checkedKind(String kind) {
        if (!KINDS.contains(kind)) {
            throw new IllegalArgumentException("outbox kind must be one of " + KINDS + ", got '" + kind + "'");
        }
        return kind;
    }

    private static Row row(ResultSet rs) throws SQLException {
        String state = rs.getString(5);
        return new Row(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), state, rs.getInt(6),
                       rs.getString(7), Sql.instant(rs, 8), "PENDING".equals(state) ? Sql.instant(rs, 9) : null, Sql.instant(rs, 10));
    }
}
