package lastseat.access;

import lastseat.config.AccessConfig;
import lastseat.db.Database;
import lastseat.db.SharedReads;
import lastseat.db.Sql;
import lastseat.work.Deadline;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Clock;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The API keys, in the database so that every instance sees the same ones at once.
 *
 * <p>Contract: a key is {@code ls_<id>_<secret>}, 64 random bits of id and 128 of secret, made here from
 * {@link SecureRandom} and shown once; the table keeps only the SHA-256 of the whole key. A request's key is
 * found by its id and its hash compared with {@link MessageDigest#isEqual} (constant time), on every
 * request — by a read sent after the request arrived, its own or shared with others presenting the same
 * key ({@link #caller}): a revoked key is refused by the next request to any instance.
 *
 * <p>Hazard: the secret is high-entropy, so a fast hash is enough; a key chosen by a person (the
 * configuration's {@code access.operator-key}) must be made the same way, which the configuration checks.
 */
public final class ApiKeys {
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final HexFormat HEX = HexFormat.of();

    private final Database db;
    private final Clock clock;
    private final SharedReads<String, Optional<Caller>> reads;

    public ApiKeys(Database db, Clock clock) {
        this.db = db;
        this.clock = clock;
        this.reads = new SharedReads<>(db);
    }

    /** A key as its owner sees it once, and as the list shows it (without the key). */
    public record Listed(String name, Role role, OptionalInt maxInFlight, String createdAt, boolean revoked) {
    }

    /** How an attempt to make or change a key ended. */
    public sealed interface Made {
        record Created(String name, Role role, OptionalInt maxInFlight, String key) implements Made {
        }

        /** A key with the name exists (revoked ones too: a name is never reused). */
        record NameTaken(String name) implements Made {
        }
    }

    /**
     * The caller a presented key stands for; empty for a malformed, unknown or revoked key. The read
     * waits for a connection no later than {@code deadline} ({@link lastseat.db.DatabaseBusy} past it),
     * and is shared with the requests presenting the same key while it waits ({@link SharedReads}: one
     * read for a burst of a shop's buyers, and still one sent after each of them arrived).
     */
    public Optional<Caller> caller(String presented, Deadline deadline) {
        if (!AccessConfig.KEY.matcher(presented).matches()) {
            return Optional.empty();
        }
        String id = presented.substring(3, 19);
        byte[] hash = hash(presented);
        return reads.read(presented, deadline, c -> Sql.list(c, "SELECT name, role, max_in_flight, key_hash FROM api_keys "
                                                                 + "WHERE key_id = ? AND revoked_at IS NULL",
                        rs -> MessageDigest.isEqual(hash, HEX.parseHex(rs.getString(4)))
                              ? Optional.of(new Caller(rs.getString(1), Role.of(rs.getString(2)), limit(rs.getObject(3))))
                              : Optional.<Caller>empty(), id)
                .stream().flatMap(Optional::stream).findFirst());
    }

    /** The key reads, for tests: how many were sent, how many requests shared one. */
    SharedReads<String, Optional<Caller>> reads() {
        return reads;
    }

    /** Makes a new key; {@link Made.NameTaken} when the name was ever used. */
    public Made create(String name, Role role, OptionalInt maxInFlight) {
        String key = newKey();
        return insert(name, role, maxInFlight, key) ? new Made.Created(name, role, maxInFlight, key) : new Made.NameTaken(name);
    }

    /**
     * Installs a key given by the configuration under {@code name} (the operator's, the demo's): made if
     * missing, replaced if the configuration now gives another key, left alone if it is the same. A key
     * revoked stays revoked: a restart does not bring it back.
     */
    public void install(String name, Role role, String key) {
        if (insert(name, role, OptionalInt.empty(), key)) {
            return;
        }
        db.inTransaction(c -> Sql.update(c, "UPDATE api_keys SET key_id = ?, key_hash = ?, role = ? WHERE name = ?",
                                         key.substring(3, 19), HEX.formatHex(hash(key)), role.column(), name));
    }

    /**
     * Revokes every key whose value is {@code key}: the demo's published keys, on a start without the
     * demo, so that a database once run by bin/run does not keep a key anyone can read in the README.
     * How many it revoked.
     */
    public int revokeValue(String key) {
        return db.inTransaction(c -> Sql.update(c, "UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND key_hash = ? "
                                                   + "AND revoked_at IS NULL",
                                                clock.instant(), key.substring(3, 19), HEX.formatHex(hash(key))));
    }

    public List<Listed> list() {
        return db.read(c -> Sql.list(c, "SELECT " + LISTED + " FROM api_keys ORDER BY name", ApiKeys::listed));
    }

    /** The key named {@code name}, read alone (not the whole list). */
    public Optional<Listed> find(String name) {
        return db.read(c -> Sql.list(c, "SELECT " + LISTED + " FROM api_keys WHERE name = ?", ApiKeys::listed, name)).stream().findFirst();
    }

    private static final String LISTED = "name, role, max_in_flight, created_at, revoked_at";

    private static Listed listed(java.sql.ResultSet rs) throws java.sql.SQLException {
        return new Listed(rs.getString(1), Role.of(rs.getString(2)), limit(rs.getObject(3)), Sql.instant(rs, 4).toString(),
                          rs.getObject(5) != null);
    }

    /** Revokes the key: true when it was in use until now, false when there is none by that name or it was revoked. */
    public boolean revoke(String name) {
        return db.inTransaction(c -> Sql.update(c, "UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL",
                                                clock.instant(), name)) == 1;
    }

    /** Sets a client's limit on purchases in flight (empty: none); false when there is no such client key in use. */
    public boolean limit(String name, OptionalInt maxInFlight) {
        return db.inTransaction(c -> Sql.update(c, "UPDATE api_keys SET max_in_flight = ? WHERE name = ? AND role = 'client' "
                                                   + "AND revoked_at IS NULL",
                                                maxInFlight.isPresent() ? maxInFlight.getAsInt() : null, name)) == 1;
    }

    private boolean insert(String name, Role role, OptionalInt maxInFlight, String key) {
        return db.write(c -> {
            try {
                Sql.update(c, "INSERT INTO api_keys (name, key_id, key_hash, role, max_in_flight, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                           name, key.substring(3, 19), HEX.formatHex(hash(key)), role.column(),
                           maxInFlight.isPresent() ? maxInFlight.getAsInt() : null, clock.instant());
                return true;
            } catch (java.sql.SQLException e) {
                if (Database.isUniqueViolation(e)) {
                    return false;
                }
                throw e;
            }
        });
    }

    private static OptionalInt limit(Object column) {
        return column == null ? OptionalInt.empty() : OptionalInt.of(((Number) column).intValue());
    }

    /**
     * A new key's value, {@code ls_<id>_<secret>} from {@link SecureRandom}, stored nowhere: for {@link #create},
     * and for a key that must be known before its database exists (the warm-up's throwaway copy).
     */
    public static String newKey() {
        return "ls_" + HEX.formatHex(random(8)) + "_" + HEX.formatHex(random(16));
    }

    private static byte[] random(int bytes) {
        byte[] value = new byte[bytes];
        RANDOM.nextBytes(value);
        return value;
    }

    private static byte[] hash(String key) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.US_ASCII));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
