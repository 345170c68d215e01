package lastseat.outbox;

import lastseat.db.Sql;
import lastseat.db.TimeOrderedId;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;

/**
 * Durable notifications: a row written in the same transaction as the state change it announces,
 * so a confirmation and its email are committed together or not at all. The dedupe key
 * (purchase id + kind) is unique: the same notification cannot be queued twice, and it is the
 * {@code Idempotency-Key} the delivery carries, so a re-sent email is recognised by the receiver.
 */
public final class Outbox {
    private Outbox() {
    }

    static String dedupeKey(String purchaseId, String kind) {
        return purchaseId + ":" + kind;
    }

    public static void add(Connection c, String kind, String purchaseId, String payload, Instant now) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO outbox (id, dedupe_key, kind, purchase_id, payload, state, attempts, next_attempt_at, created_at) "
                + "VALUES (?, ?, ?, ?, ?, 'PENDING', 0, ?, ?)")) {
            ps.setString(1, TimeOrderedId.next());
            ps.setString(2, dedupeKey(purchaseId, kind));
            ps.setString(3, kind);
            ps.setString(4, purchaseId);
            ps.setString(5, payload);
            Sql.set(ps, 6, now);
            Sql.set(ps, 7, now);
            ps.executeUpdate();
        }
    }
}
