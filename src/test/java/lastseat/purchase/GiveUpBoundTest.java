package lastseat.purchase;

import lastseat.config.ReconcileConfig;
import lastseat.work.Latency;
import lastseat.db.Sql;
import lastseat.inventory.Order;
import lastseat.outside.Outside;
import lastseat.payment.PaymentGateway;
import lastseat.support.FakeOutside.Trouble;
import lastseat.support.InProcess;
import lastseat.work.Deadline;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fast tier: the bound on PAYMENT_UNKNOWN that GUARANTEES.md states. A purchase whose payment stays
 * unknown is shown to an operator (PAYMENT_UNRESOLVED) no earlier than {@code reconcile.give-up-after}
 * after its payment went unknown and no later than that plus the longer of {@code reconcile.interval}
 * and one question (a lookup and a resend, each {@code reconcile.call-timeout}) — not a grown backoff
 * later, and not after the questions about every other purchase due in the same pass.
 *
 * <p>The provider never settles anything: each lookup says it has nothing for the key, and each
 * resend times out, and each call costs its whole timeout on the test clock. The worker's loop — a
 * pass, then {@code reconcile.interval} of pause — is played on the same clock with the production
 * defaults (10 min give-up, 1 min max-backoff, 2 s call timeout).
 */
@Tag("fast")
class GiveUpBoundTest {
    private static final int PURCHASES = 5;
    private final InProcess app = InProcess.start(Map.of("purchase.deadline", "300ms", "payment.max-wait", "300ms"));
    private final ReconcileConfig config = app.config.reconcile();
    private final AtomicInteger calls = new AtomicInteger();

    @AfterEach
    void close() {
        app.close();
    }

    @Test
    void aPaymentThatStaysUnknownIsShownToAnOperatorWithinGiveUpAfterAndOneIntervalOrQuestionNotABackoffLater() throws Exception {
        String event = app.newEvent(PURCHASES);
        for (int i = 1; i <= PURCHASES; i++) {
            // Lost on the way: the provider never saw it, and the silent provider below never will.
            app.outside.trouble(Trouble.LOSE_REQUEST);
            PurchaseOutcome outcome = app.flow.purchase(new Order(event, List.of(String.valueOf(i)), 1, "buyer-" + i,
                                                                  "buyer-" + i + "@example.com", "tok_ok", "demo-shop",
                                                                  UUID.randomUUID().toString()),
                                                        Deadline.after(app.config.purchase().deadline(), System.nanoTime()));
            assertThat(outcome).isInstanceOf(PurchaseOutcome.Pending.class);
        }
        Reconciler reconciler = new Reconciler(app.purchases, new PaymentGateway(new SilentProvider(), app.config.payment(), Latency.of(app.config.admission().callTime())),
                                               config, app.clock);
        Duration oneQuestion = config.callTimeout().multipliedBy(2);
        Duration bound = config.giveUpAfter().plus(config.interval().compareTo(oneQuestion) > 0 ? config.interval() : oneQuestion);
        Instant until = app.clock.instant().plus(config.giveUpAfter()).plus(config.maxBackoff().multipliedBy(3));

        // The worker: a pass, then a pause of one interval; every question inside a pass moves the clock too.
        while (unresolved(event) < PURCHASES && app.clock.instant().isBefore(until)) {
            reconciler.reconcile();
            app.clock.advance(config.interval());
        }

        List<Moved> moves = moves(event);
        assertThat(moves).hasSize(PURCHASES).allSatisfy(move -> {
            assertThat(move.state()).isEqualTo("PAYMENT_UNRESOLVED");
            Duration waited = Duration.between(move.unknownSince(), move.at());
            assertThat(waited).as("%s: never before give-up-after", move.id()).isGreaterThanOrEqualTo(config.giveUpAfter());
            assertThat(waited).as("%s: within give-up-after + max(interval, 2 × call-timeout) = %s", move.id(), bound)
                    .isLessThanOrEqualTo(bound);
        });
        assertThat(calls.get()).as("the provider was asked all along").isGreaterThan(PURCHASES * 2);
        assertThat(app.outside.captures()).as("nothing was captured, and nothing released under a capture").isEmpty();
        assertThat(app.db.count("SELECT COUNT(*) FROM seats WHERE event_id = ? AND state = 'HELD'", event))
                .as("an operator's purchases keep their seats").isEqualTo(PURCHASES);
        app.invariantsHold(event);
        assertThat(app.payments.availablePermits()).as("payment permits back").isEqualTo(app.config.payment().permits());
        assertThat(app.database.activeConnections()).as("pool connections in use").isZero();
    }

    /** When each purchase of the event went unknown, and its state and last move (the move to PAYMENT_UNRESOLVED). */
    private record Moved(String id, String state, Instant unknownSince, Instant at) {
    }

    private List<Moved> moves(String event) {
        return app.database.read(c -> Sql.list(c, "SELECT id, state, unknown_since, updated_at FROM purchases WHERE event_id = ?",
                                              rs -> new Moved(rs.getString(1), rs.getString(2), Sql.instant(rs, 3), Sql.instant(rs, 4)),
                                              event));
    }

    private long unresolved(String event) {
        return app.db.count("SELECT COUNT(*) FROM purchases WHERE event_id = ? AND state = 'PAYMENT_UNRESOLVED'", event);
    }

    /** A provider that never settles a key: a lookup finds nothing, a resend gets no answer; each takes its whole timeout. */
    private final class SilentProvider implements Outside {
        @Override
        public Answer post(String path, String json, Map<String, String> headers, Deadline deadline) throws HttpTimeoutException {
            throw new IllegalStateException("the reconciler sends with a timeout, not a deadline");
        }

        @Override
        public Answer post(String path, String json, Map<String, String> headers, Duration timeout) throws HttpTimeoutException {
            calls.incrementAndGet();
            app.clock.advance(timeout);
            throw new HttpTimeoutException("request timed out");
        }

        @Override
        public Answer get(String pathAndQuery, Duration timeout) {
            calls.incrementAndGet();
            app.clock.advance(timeout);
            return new Answer(404, "{\"error\":\"no payment with that idempotency key\"}");
        }
    }
}
