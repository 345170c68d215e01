package lastseat.purchase;

import lastseat.checks.Quote;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.Hold;
import lastseat.inventory.Order;
import lastseat.support.InProcess;
import lastseat.web.Reply;
import lastseat.work.Deadline;
import lastseat.work.Timeline;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Idempotency-Keys' background job, on a test clock: a key whose request's process stopped gets
 * its purchase's final answer once recovery has ended it (or is let go when nothing of it remains), and
 * answered keys are forgotten after {@code idempotency.retention}, a bounded batch per pass — but not
 * while their purchase has not ended.
 */
@Tag("fast")
class KeyKeeperTest {
    private static final String CLIENT = "shop";
    private final InProcess app = InProcess.start(Map.of("idempotency.prune-batch", "2"));

    @AfterEach
    void close() {
        app.close();
    }

    @Test
    void aKeyLeftInFlightByACrashGetsItsConfirmedPurchasesAnswer() throws InterruptedException {
        String event = app.newEvent("A1");
        String key = UUID.randomUUID().toString();
        claim(key);
        PurchaseOutcome outcome = app.flow.purchase(order(event, key), Deadline.after(app.config.purchase().deadline(), System.nanoTime()));
        String id = ((PurchaseOutcome.Confirmed) outcome).purchase().id();

        int before = app.workers.keepKeysNow();
        app.clock.advance(app.config.abandonedAge().plusSeconds(1));
        int settled = app.workers.keepKeysNow();
        IdempotencyKeys.Claim retry = app.keys.claim(CLIENT, key, "body");

        assertThat(before).as("not before the claim is abandoned").isZero();
        assertThat(settled).isEqualTo(1);
        assertThat(retry).isInstanceOfSatisfying(IdempotencyKeys.Claim.Replay.class, replay -> {
            assertThat(replay.reply().status()).isEqualTo(201);
            assertThat(new String(replay.reply().body(), StandardCharsets.UTF_8)).contains(id).contains("CONFIRMED");
        });
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aKeyLeftInFlightWhosePurchaseStillHoldsASeatWaitsUntilRecoveryHasEndedIt() {
        String event = app.newEvent("A1");
        String key = UUID.randomUUID().toString();
        claim(key);
        Purchases.Reservation.Held held = (Purchases.Reservation.Held) app.purchases.reserve(order(event, key));

        app.clock.advance(app.config.abandonedAge().plusSeconds(1));
        int whileHeld = app.workers.keepKeysNow();
        app.workers.sweepNow();
        int afterRecovery = app.workers.keepKeysNow();
        IdempotencyKeys.Claim retry = app.keys.claim(CLIENT, key, "body");

        assertThat(whileHeld).as("its purchase still holds a seat").isZero();
        assertThat(app.state(held.hold().purchaseId())).isEqualTo("RELEASED");
        assertThat(afterRecovery).isEqualTo(1);
        assertThat(retry).as("nothing of it remains: a retry runs afresh").isInstanceOf(IdempotencyKeys.Claim.Fresh.class);
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void keysOfPurchasesStillOpenDoNotHideANewerKeyThatCanBeSettled() {
        String event = app.newEvent("A1", "A2", "A3");
        for (String seat : List.of("A1", "A2", "A3")) {
            String key = UUID.randomUUID().toString();
            claim(key);
            app.purchases.reserve(new Order(event, List.of(seat), 1, "ada", "ada@example.com", "tok_ok", CLIENT, key));
        }
        app.clock.advance(Duration.ofSeconds(1));
        String orphan = UUID.randomUUID().toString();
        claim(orphan);

        app.clock.advance(app.config.abandonedAge().plusSeconds(1));
        int settled = app.workers.keepKeysNow();

        assertThat(settled).as("more held purchases' keys than a batch (2), all older: the key without a purchase is still reached")
                .isEqualTo(1);
        assertThat(app.keys.claim(CLIENT, orphan, "body")).isInstanceOf(IdempotencyKeys.Claim.Fresh.class);
        assertThat(app.db.count("SELECT COUNT(*) FROM idempotency_keys WHERE state = 'IN_FLIGHT'")).as("the held ones' keys stay")
                .isEqualTo(4);
    }

    @Test
    void answeredKeysAreForgottenAfterTheRetentionABoundedBatchAtATimeAndKeysInFlightNever() {
        List<String> answered = List.of(UUID.randomUUID().toString(), UUID.randomUUID().toString(), UUID.randomUUID().toString());
        for (String key : answered) {
            String token = claim(key);
            assertThat(app.keys.complete(CLIENT, key, token, new Reply(201, "application/json", null, null, "{}".getBytes())))
                    .isEqualTo(IdempotencyKeys.Ending.STORED);
        }
        String inFlight = UUID.randomUUID().toString();
        claim(inFlight);
        Duration retention = app.config.idempotency().retention();

        app.clock.advance(retention.minusSeconds(1));
        int early = app.keys.prune(retention, 2);
        app.clock.advance(Duration.ofSeconds(2));
        int first = app.keys.prune(retention, 2);
        int second = app.keys.prune(retention, 2);
        int third = app.keys.prune(retention, 2);

        assertThat(early).as("within the retention").isZero();
        assertThat(List.of(first, second, third)).containsExactly(2, 1, 0);
        assertThat(app.keys.claim(CLIENT, answered.getFirst(), "body")).as("forgotten: a new purchase")
                .isInstanceOf(IdempotencyKeys.Claim.Fresh.class);
        assertThat(app.db.count("SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = ? AND state = 'IN_FLIGHT'", inFlight))
                .as("a key in flight is never pruned").isEqualTo(1);
    }

    @Test
    void theKeepersOwnLoopPrunesABacklogBatchAfterBatchWithoutWaitingItsIntervalBetween() throws InterruptedException {
        for (int i = 0; i < 5; i++) {
            String key = UUID.randomUUID().toString();
            assertThat(app.keys.complete(CLIENT, key, claim(key), new Reply(201, "application/json", null, null, "{}".getBytes())))
                    .isEqualTo(IdempotencyKeys.Ending.STORED);
        }
        app.clock.advance(app.config.idempotency().retention().plusSeconds(1));

        // prune-batch 2, prune-interval a minute: batch by interval, the last key would go two minutes later.
        app.workers.start();
        long until = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (app.db.count("SELECT COUNT(*) FROM idempotency_keys") > 0 && System.nanoTime() < until) {
            Thread.sleep(20);
        }

        assertThat(app.config.idempotency().pruneInterval()).isEqualTo(Duration.ofMinutes(1));
        assertThat(app.db.count("SELECT COUNT(*) FROM idempotency_keys")).as("all five pruned within 10 s").isZero();
    }

    @Test
    void anAnsweredKeyWhosePurchaseHasNotEndedOutlivesTheRetentionWithoutHidingTheKeysThatMayGo() {
        String event = app.newEvent("A1", "A2", "A3", "A4");
        Map<String, String> open = new LinkedHashMap<>();
        for (PurchaseState state : List.of(PurchaseState.HELD, PurchaseState.PAYING, PurchaseState.PAYMENT_UNKNOWN,
                                           PurchaseState.PAYMENT_UNRESOLVED)) {
            String key = UUID.randomUUID().toString();
            String token = claim(key);
            open.put(key, purchaseIn(event, "A" + (open.size() + 1), key, state));
            assertThat(app.keys.complete(CLIENT, key, token, new Reply(202, "application/json", null, null,
                    ("{\"state\":\"" + state + "\"}").getBytes(StandardCharsets.UTF_8)))).isEqualTo(IdempotencyKeys.Ending.STORED);
        }
        app.clock.advance(Duration.ofSeconds(1));
        String answered = UUID.randomUUID().toString();
        assertThat(app.keys.complete(CLIENT, answered, claim(answered), new Reply(201, "application/json", null, null, "{}".getBytes())))
                .isEqualTo(IdempotencyKeys.Ending.STORED);
        app.clock.advance(app.config.idempotency().retention().plusSeconds(1));

        int pruned = app.workers.keepKeysNow();

        assertThat(pruned).as("four older keys of open purchases, a batch of 2: the key that may go is still reached").isEqualTo(1);
        assertThat(app.keys.claim(CLIENT, answered, "body")).isInstanceOf(IdempotencyKeys.Claim.Fresh.class);
        open.forEach((key, id) -> assertThat(app.keys.claim(CLIENT, key, "body")).as("the key of %s, %s", app.state(id), id)
                .isInstanceOfSatisfying(IdempotencyKeys.Claim.Replay.class,
                                        replay -> assertThat(replay.reply().status()).as("its 202, not a second purchase").isEqualTo(202)));
        assertThat(app.db.count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).isEqualTo(4);

        // Once the purchases end, their keys go with the next pass.
        open.forEach((key, id) -> {
            Timeline timeline = new Timeline(app.clock);
            assertThat(app.purchases.release(id, PurchaseState.valueOf(app.state(id)), "a test", timeline, -1))
                    .isInstanceOf(Purchases.Moved.Done.class);
        });
        int afterTheyEnded = app.workers.keepKeysNow() + app.workers.keepKeysNow();

        assertThat(afterTheyEnded).isEqualTo(4);
        assertThat(app.db.count("SELECT COUNT(*) FROM idempotency_keys WHERE idem_key <> ?", answered)).isZero();
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    /** A purchase of {@code seat} made with {@code key}, moved to {@code state} the way the flow and the reconciler move it. */
    private String purchaseIn(String event, String seat, String key, PurchaseState state) {
        Hold hold = ((Purchases.Reservation.Held) app.purchases.reserve(
                new Order(event, List.of(seat), 1, "ada", "ada@example.com", "tok_ok", CLIENT, key))).hold();
        String id = hold.purchaseId();
        Timeline timeline = new Timeline(app.clock);
        List<Purchases.Moved> moves = switch (state) {
            case HELD -> List.of();
            case PAYING -> List.of(app.purchases.startPayment(hold, new Quote(BigDecimal.ONE, "EUR")));
            case PAYMENT_UNKNOWN -> List.of(app.purchases.startPayment(hold, new Quote(BigDecimal.ONE, "EUR")),
                                            app.purchases.loseAnswer(id, "a test", timeline));
            case PAYMENT_UNRESOLVED -> List.of(app.purchases.startPayment(hold, new Quote(BigDecimal.ONE, "EUR")),
                                               app.purchases.loseAnswer(id, "a test", timeline), app.purchases.giveUp(id, "a test"));
            default -> throw new IllegalArgumentException(state + " is not open");
        };
        assertThat(moves).allMatch(Purchases.Moved.Done.class::isInstance);
        assertThat(app.state(id)).isEqualTo(state.name());
        return id;
    }

    private String claim(String key) {
        return ((IdempotencyKeys.Claim.Fresh) app.keys.claim(CLIENT, key, "body")).token();
    }

    private static Order order(String event, String key) {
        return new Order(event, List.of("A1"), 1, "ada", "ada@example.com", "tok_ok", CLIENT, key);
    }
}
