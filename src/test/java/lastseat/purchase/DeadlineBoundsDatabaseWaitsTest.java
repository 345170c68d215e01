package lastseat.purchase;

import lastseat.db.DatabaseBusy;
import lastseat.inventory.Order;
import lastseat.support.HeldConnection;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.support.Waits;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * A purchase waits for the database no longer than its deadline before it has reserved anything (I5):
 * with every pool connection taken, or its seat's row locked by another transaction, it is answered 503
 * {@code database-busy} by its 800 ms deadline, not after {@code db.connection-timeout} or
 * {@code db.lock-timeout} (3 s here), and it changed nothing — its retry with the same key, once the
 * database is free, buys the seat. Each test first shows the wait without a deadline running to the
 * database's own bound: what a purchase did before.
 */
class DeadlineBoundsDatabaseWaitsTest {
    private static final long DEADLINE_MS = 800;
    /** The database's own bounds, far beyond the deadline. */
    private static final long DB_BOUND_MS = 3000;
    /** Scheduling and HTTP on a busy two-core machine; still well short of the database's own bound. */
    private static final long SLACK_MS = 1000;

    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("db.pool-size", "2", "db.connection-timeout", DB_BOUND_MS + "ms",
                                                           "db.lock-timeout", DB_BOUND_MS + "ms", "purchase.deadline", DEADLINE_MS + "ms"));

    @Test
    void aPurchaseWhoseKeyCannotBeReadForWantOfAConnectionIsAnsweredByItsDeadlineAndChangesNothing() throws Exception {
        String event = app.newEvent("A1");
        String key = UUID.randomUUID().toString();
        CountDownLatch taken = new CountDownLatch(2);
        CountDownLatch letGo = new CountDownLatch(1);
        Answer answer;
        try (ExecutorService holders = Executors.newVirtualThreadPerTaskExecutor()) {
            try {
                assertThat(HeldConnection.holdAll(app.services().db(), holders, taken, letGo)).as("both connections taken").isTrue();

                long start = System.nanoTime();
                Throwable unbounded = catchThrowable(() -> app.services().db().read(c -> c.isValid(1)));
                long unboundedMs = (System.nanoTime() - start) / 1_000_000;
                assertThat(unbounded).as("a read with no deadline").isInstanceOf(DatabaseBusy.class);
                assertThat(unboundedMs).as("a wait with no deadline runs to db.connection-timeout").isGreaterThanOrEqualTo(DB_BOUND_MS - 50);

                answer = app.client().purchaseSeats(key, event, "A1");
            } finally {
                letGo.countDown();
            }
        }

        assertThat(answer.status()).as(answer.toString()).isEqualTo(503);
        assertThat(answer.type()).isEqualTo("database-busy");
        assertThat(answer.elapsedMillis()).as("answered by the deadline, not db.connection-timeout").isLessThan(DEADLINE_MS + SLACK_MS);
        assertThat(answer.header("Server-Timing")).as("the access filter's answer: the key's read found no connection").isNull();
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).as("nothing reserved").isZero();

        Answer retry = app.client().purchaseSeats(key, event, "A1");
        assertThat(retry.status()).as("the same key, once the pool is free: " + retry).isEqualTo(201);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aPurchaseWhoseSeatIsLockedByAnotherTransactionIsAnsweredByItsDeadlineAndChangesNothing() throws Exception {
        String event = app.newEvent("A1");
        String key = UUID.randomUUID().toString();
        CountDownLatch locked = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        Answer answer;
        try (ExecutorService holder = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Integer> lock = holder.submit(() -> app.services().db().inTransaction(c -> {
                // Changes nothing: it holds the seat's row until it rolls back.
                int rows = lastseat.db.Sql.list(c, "SELECT label FROM seats WHERE event_id = ? AND label = 'A1' FOR UPDATE",
                                                rs -> rs.getString(1), event).size();
                locked.countDown();
                Waits.quietly(letGo);
                c.rollback();
                return rows;
            }));
            try {
                assertThat(locked.await(5, TimeUnit.SECONDS)).as("the seat's row locked").isTrue();

                long start = System.nanoTime();
                Throwable unbounded = catchThrowable(() -> app.services().purchases().reserve(
                        new Order(event, List.of("A1"), 1, "bob", "bob@example.com", "tok_ok", "test", UUID.randomUUID().toString())));
                long unboundedMs = (System.nanoTime() - start) / 1_000_000;
                assertThat(unbounded).as("a reservation with no deadline").isInstanceOf(DatabaseBusy.class);
                assertThat(unboundedMs).as("a wait with no deadline runs to db.lock-timeout").isGreaterThanOrEqualTo(DB_BOUND_MS - 50);

                answer = app.client().purchaseSeats(key, event, "A1");
            } finally {
                letGo.countDown();
            }
            assertThat(lock.get()).as("the row the holder locked").isEqualTo(1);
        }

        assertThat(answer.status()).as(answer.toString()).isEqualTo(503);
        assertThat(answer.type()).isEqualTo("database-busy");
        assertThat(answer.elapsedMillis()).as("answered by the deadline, not db.lock-timeout").isLessThan(DEADLINE_MS + SLACK_MS);
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).as("nothing reserved").isZero();

        assertThat(lockTimeoutOfEveryConnection()).as("each pooled H2 session's lock wait, back to db.lock-timeout after the bounded one")
                .containsExactly(DB_BOUND_MS, DB_BOUND_MS);
        Answer retry = app.client().purchaseSeats(key, event, "A1");
        assertThat(retry.status()).as("the same key, once the row is free: " + retry).isEqualTo(201);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aPurchasesKeyClaimThatFindsEveryConnectionTakenEndsAtItsDeadline() throws Exception {
        String event = app.newEvent("A1");
        String key = UUID.randomUUID().toString();
        Order order = new Order(event, List.of("A1"), 1, "bob", "bob@example.com", "tok_ok", "test", key);
        CountDownLatch taken = new CountDownLatch(2);
        CountDownLatch letGo = new CountDownLatch(1);
        Throwable busy;
        long waitedMs;
        try (ExecutorService holders = Executors.newVirtualThreadPerTaskExecutor()) {
            try {
                assertThat(HeldConnection.holdAll(app.services().db(), holders, taken, letGo)).as("both connections held").isTrue();
                // Past the access filter: the route's own first wait, the key's claim.
                long start = System.nanoTime();
                busy = catchThrowable(() -> app.services().purchaseRoutes().admitted(key, "{}".getBytes(), order,
                        lastseat.work.Deadline.after(java.time.Duration.ofMillis(DEADLINE_MS), start)));
                waitedMs = (System.nanoTime() - start) / 1_000_000;
            } finally {
                letGo.countDown();
            }
        }

        assertThat(busy).as("the key's claim").isInstanceOf(DatabaseBusy.class);
        assertThat(waitedMs).as("by the deadline, not db.connection-timeout").isLessThan(DEADLINE_MS + SLACK_MS);
        assertThat(app.db().count("SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = ?", key)).as("no key claimed").isZero();
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).as("nothing reserved").isZero();
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    /** H2's {@code LOCK_TIMEOUT()} of both pooled connections, taken at once so that each is asked. */
    private static List<Long> lockTimeoutOfEveryConnection() throws Exception {
        CountDownLatch both = new CountDownLatch(2);
        try (ExecutorService askers = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Long>> asked = new java.util.ArrayList<>();
            for (int i = 0; i < 2; i++) {
                asked.add(askers.submit(() -> app.services().db().read(c -> {
                    both.countDown();
                    Waits.quietly(both);
                    return lastseat.db.Sql.list(c, "SELECT LOCK_TIMEOUT()", rs -> rs.getLong(1)).getFirst();
                })));
            }
            List<Long> timeouts = new java.util.ArrayList<>();
            for (Future<Long> f : asked) {
                timeouts.add(f.get());
            }
            return timeouts;
        }
    }
}
