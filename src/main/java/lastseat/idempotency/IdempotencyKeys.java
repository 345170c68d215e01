package lastseat.idempotency;

import lastseat.db.Database;
import lastseat.db.Sql;
import lastseat.work.Deadline;
import lastseat.purchase.PurchaseState;
import lastseat.web.Reply;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * {@code Idempotency-Key} as in the IETF draft, kept in the database so that every instance and
 * every restart sees the same keys.
 *
 * <p>Contract: the first request with a key claims it (one INSERT; the primary key decides between
 * racing requests) and gets a claim token. While it runs, the same key gets 409; with another body,
 * 422; once it is done, the stored answer byte for byte. Answers that invite a retry (503, 504, 500)
 * are not stored: the key is let go, so the retry runs afresh — but only when nothing of the key's
 * purchase remains (no seat held, no payment open): a key whose purchase still holds something stays
 * taken until recovery has ended it, so a retry can never meet its own hold and be told the seats are
 * taken.
 *
 * <p>A key still in flight {@code staleAfter} after it was claimed belongs to a request whose
 * process stopped; a retry is told so ({@link Claim.Abandoned}) and may {@link #takeOver} the key,
 * which gives the claim a new token. {@link #complete} and {@link #forget} act only with the
 * current token: a request that outlived its claim cannot store over, or delete, its successor's.
 */
public final class IdempotencyKeys {
    private static final Pattern KEY = Pattern.compile("[\\x21-\\x7E]{1,255}");

    private final Database db;
    private final Clock clock;
    private final Duration staleAfter;

    public IdempotencyKeys(Database db, Clock clock, Duration staleAfter) {
        this.db = db;
        this.clock = clock;
        this.staleAfter = staleAfter;
    }

    /** What a request with a key may do. */
    public sealed interface Claim {
        /** This request owns the key with {@code token}: run it, then {@link #complete} or {@link #forget}. */
        record Fresh(String token) implements Claim {
        }

        /** The key was used and answered: send this answer again. */
        record Replay(Reply reply) implements Claim {
        }

        /** The key's request never finished (its process stopped); it was claimed at {@code claimedAt}. */
        record Abandoned(OffsetDateTime claimedAt) implements Claim {
        }

        /** A request with the key is still running: retry after it has finished. */
        record InFlight() implements Claim {
        }

        /** The key was used for a different request body. */
        record Reused() implements Claim {
        }
    }

    /** What a request's {@code Idempotency-Key} header holds: a key a purchase can use, or why it has none. */
    public sealed interface Header {
        /** 1-255 visible ASCII characters. */
        record Valid(String key) implements Header {
        }

        /** No header. */
        record Missing() implements Header {
        }

        /** A header that is not a key (empty, too long, a space or a control character in it). */
        record Malformed() implements Header {
        }
    }

    /** The key in {@code header} (the header's first value), or why there is none. */
    public static Header require(Optional<String> header) {
        if (header.isEmpty()) {
            return new Header.Missing();
        }
        return KEY.matcher(header.get()).matches() ? new Header.Valid(header.get()) : new Header.Malformed();
    }

    public static String fingerprint(byte[] body) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Whether a request with this client's key was claimed (and not let go): a read, nothing claimed,
     * waiting for a connection no later than the request's {@code deadline}.
     */
    public boolean known(String client, String key, Deadline deadline) {
        return db.read(deadline, c -> !Sql.list(c, "SELECT 1 FROM idempotency_keys WHERE client_name = ? AND idem_key = ?", rs -> 1,
                                      client, key).isEmpty());
    }

    /** Claims {@code key} of {@code client}: the same key from another client is another key. */
    public Claim claim(String client, String key, String fingerprint) {
        return claim(client, key, fingerprint, null);
    }

    /**
     * {@link #claim(String, String, String)} for a request due by {@code deadline}: the wait for a
     * connection ends there at the latest ({@link lastseat.db.DatabaseBusy}, nothing claimed).
     */
    public Claim claim(String client, String key, String fingerprint, Deadline deadline) {
        String token = UUID.randomUUID().toString();
        return db.write(deadline, c -> {
            try (PreparedStatement insert = c.prepareStatement(
                    "INSERT INTO idempotency_keys (client_name, idem_key, request_hash, state, created_at, claim_token) "
                    + "VALUES (?, ?, ?, 'IN_FLIGHT', ?, ?)")) {
                insert.setString(1, client);
                insert.setString(2, key);
                insert.setString(3, fingerprint);
                Sql.set(insert, 4, clock.instant());
                insert.setString(5, token);
                insert.executeUpdate();
                return new Claim.Fresh(token);
            } catch (SQLException e) {
                if (!Database.isUniqueViolation(e)) {
                    throw e;
                }
            }
            return existing(c, client, key, fingerprint, clock.instant().minus(staleAfter));
        });
    }

    /**
     * Stores {@code reply} as the answer of a key never used, in one INSERT: for a request refused by a
     * read before it claimed the key, so that every later request with the key — its own delayed
     * original among them — is told the same, and none buys under it. False when the key was claimed
     * before (nothing written): the caller goes on as for a key used before.
     */
    public boolean answerUnused(String client, String key, String fingerprint, Reply reply, Deadline deadline) {
        OffsetDateTime now = clock.instant().atOffset(ZoneOffset.UTC);
        return db.write(deadline, c -> {
            try {
                Sql.update(c, "INSERT INTO idempotency_keys (client_name, idem_key, request_hash, state, status, content_type, location, "
                              + "body, created_at, completed_at) VALUES (?, ?, ?, 'DONE', ?, ?, ?, ?, ?, ?)",
                           client, key, fingerprint, reply.status(), reply.contentType(), reply.location(),
                           new String(reply.body(), StandardCharsets.UTF_8), now, now);
                return true;
            } catch (SQLException e) {
                if (!Database.isUniqueViolation(e)) {
                    throw e;
                }
                return false;
            }
        });
    }

    /**
     * Claims an abandoned key for this request with a new token (a compare-and-set on when it was
     * claimed, so of two retries only one takes it over); empty when somebody else did.
     */
    public Optional<String> takeOver(String client, String key, OffsetDateTime claimedAt) {
        String token = UUID.randomUUID().toString();
        int rows = db.write(c -> Sql.update(c, "UPDATE idempotency_keys SET created_at = ?, claim_token = ? "
                                               + "WHERE client_name = ? AND idem_key = ? AND state = 'IN_FLIGHT' AND created_at = ?",
                                            clock.instant().atOffset(ZoneOffset.UTC), token, client, key, claimedAt));
        return rows == 1 ? Optional.of(token) : Optional.empty();
    }

    /** What became of a claim at its end. */
    public enum Ending {
        /** The answer is stored; the key replays it. */
        STORED,
        /** The key is free again; a retry runs afresh. */
        LET_GO,
        /** The key's purchase still holds seats or an open payment: the key stays taken until recovery ends it. */
        KEPT,
        /** The claim is no longer this request's (taken over after it was thought abandoned): nothing changed. */
        LOST
    }

    /** Stores the answer, if the claim is still {@code token}'s: from now on the key replays it. */
    public Ending complete(String client, String key, String token, Reply reply) {
        int rows = db.write(c -> Sql.update(c, "UPDATE idempotency_keys SET state = 'DONE', status = ?, content_type = ?, "
                                               + "location = ?, body = ?, completed_at = ? "
                                               + "WHERE client_name = ? AND idem_key = ? AND state = 'IN_FLIGHT' AND claim_token = ?",
                                            reply.status(), reply.contentType(), reply.location(),
                                            new String(reply.body(), StandardCharsets.UTF_8),
                                            clock.instant().atOffset(ZoneOffset.UTC), client, key, token));
        return rows == 1 ? Ending.STORED : Ending.LOST;
    }

    /**
     * Lets go of a key whose request ended in a way that invites a retry — only with the claim's
     * {@code token}, and only when no purchase made with the key still holds something; one
     * statement decides both, so nothing can slip in between.
     */
    public Ending forget(String client, String key, String token) {
        return db.write(c -> {
            int rows = Sql.update(c, "DELETE FROM idempotency_keys WHERE client_name = ? AND idem_key = ? AND state = 'IN_FLIGHT' "
                                     + "AND claim_token = ? AND NOT EXISTS (SELECT 1 FROM purchases WHERE client_name = ? "
                                     + "AND idempotency_key = ? AND state IN " + HOLDING + ")",
                                  client, key, token, client, key);
            if (rows == 1) {
                return Ending.LET_GO;
            }
            return Sql.list(c, "SELECT 1 FROM idempotency_keys WHERE client_name = ? AND idem_key = ? AND state = 'IN_FLIGHT' "
                               + "AND claim_token = ?", rs -> rs.getInt(1), client, key, token).isEmpty() ? Ending.LOST : Ending.KEPT;
        });
    }

    /** A key claimed and never answered: its request's process stopped. */
    public record Left(String client, String key, OffsetDateTime claimedAt) {
    }

    /**
     * Keys still in flight {@code staleAfter} after their claim whose purchase, if any, has ended, oldest
     * first, at most {@code batch}. Keys of purchases still open are left out here, not skipped later, so
     * that many of them (payments unresolved for days) cannot fill every batch and hide the others.
     */
    public List<Left> leftInFlight(int batch) {
        Instant before = clock.instant().minus(staleAfter);
        return db.read(c -> Sql.list(c, "SELECT k.client_name, k.idem_key, k.created_at FROM idempotency_keys k "
                                        + "WHERE k.state = 'IN_FLIGHT' AND k.created_at < ? AND NOT EXISTS (SELECT 1 FROM purchases p "
                                        + "WHERE p.client_name = k.client_name AND p.idempotency_key = k.idem_key AND p.state IN " + OPEN + ") "
                                        + "ORDER BY k.created_at FETCH FIRST " + batch + " ROWS ONLY",
                                     rs -> new Left(rs.getString(1), rs.getString(2), rs.getObject(3, OffsetDateTime.class)), before));
    }

    /** The purchase states not ended yet, as an SQL list. */
    private static final String OPEN = Arrays.stream(PurchaseState.values()).filter(s -> !s.terminal())
            .map(s -> "'" + s.name() + "'").collect(Collectors.joining(", ", "(", ")"));

    /**
     * Deletes at most {@code batch} answered keys whose answer is older than {@code retention}, oldest
     * first; how many it deleted. Keys in flight are never pruned: their purchase may still be settling,
     * and recovery ends them. Nor is an answered key whose purchase has not ended (a 202 stored for a
     * payment unknown or unresolved, which may last for days): a retry with it must keep meeting that
     * purchase, not become a second purchase and a second charge. Those are left out by the query that
     * picks the batch, so however many there are they cannot fill every batch and hide the keys that may go.
     */
    public int prune(Duration retention, int batch) {
        Instant before = clock.instant().minus(retention);
        return db.inTransaction(c -> {
            List<String[]> old = Sql.list(c, "SELECT k.client_name, k.idem_key FROM idempotency_keys k WHERE k.state = 'DONE' "
                                             + "AND k.completed_at < ? AND " + ENDED + " ORDER BY k.completed_at "
                                             + "FETCH FIRST " + batch + " ROWS ONLY",
                                          rs -> new String[] {rs.getString(1), rs.getString(2)}, before);
            if (old.isEmpty()) {
                return 0;
            }
            int deleted = 0;
            try (PreparedStatement ps = c.prepareStatement(
                    "DELETE FROM idempotency_keys k WHERE k.client_name = ? AND k.idem_key = ? AND k.state = 'DONE' "
                    + "AND k.completed_at < ? AND " + ENDED)) {
                for (String[] key : old) {
                    ps.setString(1, key[0]);
                    ps.setString(2, key[1]);
                    Sql.set(ps, 3, before);
                    ps.addBatch();
                }
                for (int rows : ps.executeBatch()) {
                    deleted += Math.max(rows, 0);
                }
            }
            return deleted;
        });
    }

    /** Of a key {@code k}: no purchase made with it is still open (none made at all, or every one ended). */
    private static final String ENDED = "NOT EXISTS (SELECT 1 FROM purchases p WHERE p.client_name = k.client_name "
                                        + "AND p.idempotency_key = k.idem_key AND p.state IN " + OPEN + ")";

    /** The purchase states that still hold a seat or a payment, as an SQL list. */
    private static final String HOLDING = Arrays.stream(PurchaseState.values()).filter(s -> !s.leavesNothing())
            .map(s -> "'" + s.name() + "'").collect(Collectors.joining(", ", "(", ")"));

    private static Claim existing(Connection c, String client, String key, String fingerprint, Instant staleBefore)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT request_hash, state, status, content_type, location, body, created_at "
                                                       + "FROM idempotency_keys WHERE client_name = ? AND idem_key = ?")) {
            ps.setString(1, client);
            ps.setString(2, key);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    // Claimed and let go between our insert and this read: the caller may try again.
                    return new Claim.InFlight();
                }
                if (!rs.getString(1).equals(fingerprint)) {
                    return new Claim.Reused();
                }
                if ("IN_FLIGHT".equals(rs.getString(2))) {
                    OffsetDateTime claimedAt = rs.getObject(7, OffsetDateTime.class);
                    return claimedAt.toInstant().isBefore(staleBefore) ? new Claim.Abandoned(claimedAt) : new Claim.InFlight();
                }
                return new Claim.Replay(new Reply(rs.getInt(3), rs.getString(4), rs.getString(5), null,
                        rs.getString(6).getBytes(StandardCharsets.UTF_8)));
            }
        }
    }

}
