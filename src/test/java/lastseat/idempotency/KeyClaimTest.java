package lastseat.idempotency;

import lastseat.config.DbConfig;
import lastseat.db.Database;
import lastseat.db.Sql;
import lastseat.purchase.PurchaseState;
import lastseat.support.TestClock;
import lastseat.web.Reply;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The life of one key's claim, on the keys' own table with a test clock: a claim is fenced by its
 * token, so a request that outlived its claim (thought abandoned, taken over by a retry) can neither
 * store its answer over the new owner's nor delete the new owner's claim; and a key is let go only
 * when nothing of its purchase remains.
 */
@Tag("fast")
class KeyClaimTest {
    private static final Duration STALE_AFTER = Duration.ofSeconds(6);
    private final TestClock clock = new TestClock();
    private Database db;
    private IdempotencyKeys keys;
    private String key;

    @BeforeEach
    void open() {
        db = Database.open(new DbConfig("jdbc:h2:mem:keys-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1", "sa", "", 2,
                                        Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(1), 16));
        keys = new IdempotencyKeys(db, clock, STALE_AFTER);
        key = UUID.randomUUID().toString();
    }

    @AfterEach
    void close() {
        assertThat(db.activeConnections()).as("every connection came back").isZero();
        db.close();
    }

    @Test
    void aRequestThatOutlivedItsClaimCanNeitherStoreOverNorDeleteItsSuccessorsClaim() {
        String first = fresh(keys.claim(CLIENT, key, "body"));
        clock.advance(STALE_AFTER.plusSeconds(1));
        IdempotencyKeys.Claim.Abandoned abandoned = (IdempotencyKeys.Claim.Abandoned) keys.claim(CLIENT, key, "body");
        String second = keys.takeOver(CLIENT, key, abandoned.claimedAt()).orElseThrow();

        IdempotencyKeys.Ending lateForget = keys.forget(CLIENT, key, first);
        IdempotencyKeys.Ending lateComplete = keys.complete(CLIENT, key, first, reply(503, "late"));

        assertThat(lateForget).isEqualTo(IdempotencyKeys.Ending.LOST);
        assertThat(lateComplete).isEqualTo(IdempotencyKeys.Ending.LOST);
        assertThat(keys.claim(CLIENT, key, "body")).as("the successor's claim is still in flight")
                .isInstanceOf(IdempotencyKeys.Claim.InFlight.class);
        assertThat(state()).isEqualTo("IN_FLIGHT");
        assertThat(keys.complete(CLIENT, key, second, reply(201, "ours"))).isEqualTo(IdempotencyKeys.Ending.STORED);
        IdempotencyKeys.Claim replay = keys.claim(CLIENT, key, "body");
        assertThat(replay).isInstanceOfSatisfying(IdempotencyKeys.Claim.Replay.class,
                r -> assertThat(new String(r.reply().body(), StandardCharsets.UTF_8)).isEqualTo("ours"));
    }

    @Test
    void ofTwoRetriesTakingOverOneAbandonedKeyOnlyOneGetsIt() {
        fresh(keys.claim(CLIENT, key, "body"));
        clock.advance(STALE_AFTER.plusSeconds(1));
        IdempotencyKeys.Claim.Abandoned abandoned = (IdempotencyKeys.Claim.Abandoned) keys.claim(CLIENT, key, "body");

        var one = keys.takeOver(CLIENT, key, abandoned.claimedAt());
        var other = keys.takeOver(CLIENT, key, abandoned.claimedAt());

        assertThat(one).isPresent();
        assertThat(other).isEmpty();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(PurchaseState.class)
    void aKeyIsLetGoOnlyWhenItsPurchaseHoldsNothing(PurchaseState state) {
        String token = fresh(keys.claim(CLIENT, key, "body"));
        purchaseWithKey(state);

        IdempotencyKeys.Ending ending = keys.forget(CLIENT, key, token);

        if (state.leavesNothing()) {
            assertThat(ending).isEqualTo(IdempotencyKeys.Ending.LET_GO);
            assertThat(keys.claim(CLIENT, key, "body")).as("a retry runs afresh").isInstanceOf(IdempotencyKeys.Claim.Fresh.class);
        } else {
            assertThat(ending).as("a %s purchase holds seats or money", state).isEqualTo(IdempotencyKeys.Ending.KEPT);
            assertThat(state()).isEqualTo("IN_FLIGHT");
        }
    }

    private static final String CLIENT = "shop";

    private static String fresh(IdempotencyKeys.Claim claim) {
        assertThat(claim).isInstanceOf(IdempotencyKeys.Claim.Fresh.class);
        return ((IdempotencyKeys.Claim.Fresh) claim).token();
    }

    private static Reply reply(int status, String body) {
        return new Reply(status, "application/json", null, null, body.getBytes(StandardCharsets.UTF_8));
    }

    private String state() {
        return db.read(c -> Sql.list(c, "SELECT state FROM idempotency_keys WHERE idem_key = ?", rs -> rs.getString(1), key))
                .getFirst();
    }

    private void purchaseWithKey(PurchaseState state) {
        OffsetDateTime now = clock.instant().atOffset(ZoneOffset.UTC);
        db.inTransaction(c -> {
            Sql.update(c, "INSERT INTO events (id, name, capacity, price, currency, created_at) VALUES ('e', 'E', 1, 1, 'EUR', ?)", now);
            return Sql.update(c, "INSERT INTO purchases (id, event_id, state, client_name, idempotency_key, buyer_id, buyer_email, payment_token, "
                                 + "seat_count, amount, currency, hold_expires_at, created_at, updated_at) "
                                 + "VALUES (?, 'e', ?, ?, ?, 'ada', 'ada@example.com', 'tok', 1, 1, 'EUR', ?, ?, ?)",
                              UUID.randomUUID().toString(), state.name(), CLIENT, key, now, now, now);
        });
    }
}
