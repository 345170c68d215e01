package lastseat.outbox;

import lastseat.config.OutboxConfig;
import lastseat.db.Database;
import lastseat.db.Sql;
import lastseat.outside.Outside;
import lastseat.work.Backoff;
import lastseat.work.Scoped;
import lastseat.work.Worker;

import java.io.IOException;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.random.RandomGenerator;

/**
 * Delivers the outbox: every {@code interval} one pass takes the due PENDING rows (oldest due first,
 * at most {@code batch}) and POSTs each payload to its receiver ({@code *-email} kinds to
 * {@code outbox.email-path}, {@code refund} to {@code outbox.refund-path}) with
 * {@code Idempotency-Key: <dedupe key>} (purchase id + ":" + kind). A 2xx answer marks the row SENT.
 * Any other ending is recorded in {@code last_error} and the row waits
 * {@code backoff × 2^(attempts-1)}, capped at {@code max-backoff} and drawn between half and all of
 * it, so that rows failing together do not come back together. After {@code max-attempts} attempts,
 * or on a failure {@code give-up-after} after the row was written, the row becomes DEAD: it is never
 * tried again and shows in {@code GET /outbox?state=dead} and the {@code lastseat.outbox.dead} gauge.
 *
 * <p>Permanent refusals: a 4xx answer other than 404, 408, 409, 425 and 429 makes the row DEAD at
 * once, because the same request will be refused the same way (a bad body, a rejected address).
 * 404 is retried because a receiver being deployed or a wrong path answers it for every row, and
 * dead-lettering them all at once would lose them until someone re-queues them by hand; 408, 425
 * and 429 ask to come back later; 409 is how an idempotent receiver says the same key is still in
 * flight. A row of a kind with no receiver is DEAD at once, without a call.
 *
 * <p>Claim: before the calls, a pass claims its rows, all in one transaction, each by a compare-and-set
 * that moves {@code next_attempt_at} to the lease's end — now + {@code call-timeout} × the calls one
 * delivery thread makes in the pass + {@link #LEASE_MARGIN} — and counts the attempt, on the condition
 * that {@code attempts} is still the value read ({@code attempts} only ever grows while a row is
 * PENDING, so it is the row's version). Two passes (threads or instances) that read the same row
 * cannot both claim it; the loser skips it. A failure is recorded only by the claim that made it
 * (same {@code attempts}); SENT is recorded whoever made it, because the receiver has it.
 *
 * <p>Hazard: delivery is at least once, deduplicated by the receiver through the key, never exactly
 * once. A process that stops (crash, kill, {@link #close()}) after a request left but before SENT is
 * written leaves the row PENDING with its lease; when the lease ends the row is sent again with the
 * same key, never a new one. A receiver that does not deduplicate by {@code Idempotency-Key} sends
 * such an email twice. Leases compare clocks: instances whose clocks disagree by more than
 * {@link #LEASE_MARGIN} may send one row at the same time (still with one key).
 *
 * <p>Pace: a pass makes up to {@code concurrency} deliveries at once, and a pass that took a whole batch
 * is followed by the next at once, so that sending keeps up with confirmations (one at a time, a pass
 * sent 62 emails a second to an instant receiver and 15 to a 50 ms one, while an on-sale confirms up to
 * 100). A receiver that hangs costs a pass up to {@code ceil(batch / concurrency) × call-timeout}.
 *
 * <p>Retention: each pass deletes SENT rows {@code retention} after they were sent, at most
 * {@code prune-batch}. PENDING and DEAD rows are never deleted. A deleted row's dedupe key no longer
 * guards against queueing the same notification again; what does is the purchase's state: rows are
 * queued only by moves into CONFIRMED or REFUNDED, which no move leaves ({@code Transition}).
 */
public final class OutboxWorker implements AutoCloseable {
    /** Beyond the call itself, time for connecting and for writing the outcome (pool and lock waits). */
    static final Duration LEASE_MARGIN = Duration.ofSeconds(10);

    private static final Logger LOG = Logger.getLogger(OutboxWorker.class.getName());
    private static final int MAX_ERROR_CHARS = 500;
    private static final Set<Integer> RETRIED_4XX = Set.of(404, 408, 409, 425, 429);

    private final Database db;
    private final Outside http;
    private final OutboxConfig config;
    private final Clock clock;
    private final AtomicLong claimsLost = new AtomicLong();
    private Worker worker;

    public OutboxWorker(Database db, Outside http, OutboxConfig config, Clock clock) {
        this.db = db;
        this.http = http;
        this.config = config;
        this.clock = clock;
    }

    /** Starts the background passes; once per worker. */
    public synchronized void start() {
        if (worker != null) {
            throw new IllegalStateException("the outbox worker is already started");
        }
        worker = Worker.start("outbox", config.interval(), config.batch(), () -> pass().taken());
    }

    /**
     * One pass: delivers the rows due now, at most {@code batch}, {@code concurrency} at a time, and deletes
     * the SENT rows past retention.
     *
     * @return how many rows this pass marked SENT
     * @throws InterruptedException when the thread is interrupted (by {@link #close()}); the pass stops
     *                              at once, and a row whose call was cut, or not yet made, keeps its
     *                              lease and is sent again, with the same key, when the lease ends
     */
    public int deliverDue() throws InterruptedException {
        return pass().sent();
    }

    /** What one pass did: rows it took (a whole batch: more may be due), rows it marked SENT, SENT rows it deleted. */
    record Pass(int taken, int sent, int pruned) {
    }

    /** One pass: the due rows delivered, {@code concurrency} at a time, then the SENT rows past retention deleted. */
    Pass pass() throws InterruptedException {
        List<Due> due = due();
        int sent = send(claim(deliverable(due)));
        return new Pass(due.size(), sent, prune());
    }

    /** The rows due now, at most {@code batch}, oldest due first. The steps of a pass are apart for the tests. */
    List<Due> due() {
        return db.read(c -> Sql.list(c, "SELECT id, dedupe_key, kind, payload, attempts, COALESCE(retried_at, created_at) "
                                        + "FROM outbox "
                                        + "WHERE state = 'PENDING' AND next_attempt_at <= ? "
                                        + "ORDER BY next_attempt_at, id FETCH FIRST ? ROWS ONLY",
                                     OutboxWorker::due, clock.instant(), config.batch()));
    }

    /** The rows a receiver can take; the others are made DEAD now. */
    private List<Due> deliverable(List<Due> due) {
        List<Due> deliverable = new ArrayList<>();
        for (Due row : due) {
            if (pathOf(row.kind()) == null) {
                // Nothing can deliver it, and waiting will not change that: visible at once rather than after a day.
                dead(row, row.attempts(), "no receiver for kind '" + row.kind() + "' (known: *-email, refund)");
            } else {
                deliverable.add(row);
            }
        }
        return deliverable;
    }

    /** One call for each claimed row, {@code concurrency} at a time; how many rows it marked SENT. */
    int send(List<Due> claimed) throws InterruptedException {
        AtomicInteger sent = new AtomicInteger();
        Scoped.each("outbox", claimed, config.concurrency(), row -> {
            if (Thread.currentThread().isInterrupted()) {
                throw new InterruptedException("outbox pass stopped before row " + row.id());
            }
            if (deliver(row)) {
                sent.incrementAndGet();
            }
        });
        return sent.get();
    }

    /**
     * Takes the rows for this pass's calls, all in one transaction (one commit, where a claim per row was one
     * each); the rows another pass took first are left out. Each row's lease lasts until its call may have
     * ended: a row waits for up to {@code ceil(rows / concurrency) - 1} calls before its own.
     */
    List<Due> claim(List<Due> rows) {
        if (rows.isEmpty()) {
            return rows;
        }
        Instant now = clock.instant();
        long calls = (rows.size() + config.concurrency() - 1) / config.concurrency();
        Instant leaseEnds = now.plus(config.callTimeout().multipliedBy(calls)).plus(LEASE_MARGIN);
        int[] taken = db.write(c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE outbox SET next_attempt_at = ?, attempts = attempts + 1 "
                    + "WHERE id = ? AND state = 'PENDING' AND attempts = ? AND next_attempt_at <= ?")) {
                for (Due row : rows) {
                    Sql.set(ps, 1, leaseEnds);
                    ps.setString(2, row.id());
                    ps.setInt(3, row.attempts());
                    Sql.set(ps, 4, now);
                    ps.addBatch();
                }
                return ps.executeBatch();
            }
        });
        List<Due> mine = new ArrayList<>(rows.size());
        for (int i = 0; i < rows.size(); i++) {
            if (taken[i] == 1) {
                mine.add(rows.get(i));
            } else {
                claimsLost.incrementAndGet();
            }
        }
        return mine;
    }

    /**
     * Deletes at most {@code prune-batch} SENT rows sent more than {@code retention} ago; how many. The rows
     * are found through {@code outbox_due (state, next_attempt_at)}: a SENT row's {@code next_attempt_at} is
     * the end of the lease its last delivery took, which ends after it was sent, so a row is deleted no sooner
     * than its retention says, and at most a lease later.
     */
    int prune() {
        Instant before = clock.instant().minus(config.retention());
        // Picked first, then deleted by id: H2 walks a DELETE's "IN (SELECT ... FETCH FIRST n)" lazily along the
        // index the DELETE is changing, and deleted fewer than n whenever rows tied on next_attempt_at. Picked by
        // a read, so that a pass with nothing to delete (nearly every pass) opens no write transaction.
        List<String> old = db.read(c -> Sql.list(c, "SELECT id FROM outbox WHERE state = 'SENT' AND next_attempt_at < ? "
                                                    + "AND sent_at < ? ORDER BY next_attempt_at FETCH FIRST "
                                                    + config.pruneBatch() + " ROWS ONLY",
                                                 rs -> rs.getString(1), before, before));
        if (old.isEmpty()) {
            return 0;
        }
        // One statement text whatever the count (a list of ? per count would fill the parsed-statement cache).
        return db.inTransaction(c -> {
            int deleted = 0;
            try (PreparedStatement ps = c.prepareStatement("DELETE FROM outbox WHERE id = ? AND state = 'SENT'")) {
                for (String id : old) {
                    ps.setString(1, id);
                    ps.addBatch();
                }
                for (int rows : ps.executeBatch()) {
                    deleted += Math.max(rows, 0);
                }
            }
            return deleted;
        });
    }

    /** What an operator's retry of one row did. */
    public sealed interface Retry {
        /** The row was DEAD and is PENDING again, due now, with its attempts and give-up time counted afresh. */
        record Queued(OutboxQuery.Row row) implements Retry {
        }

        /** The row is not DEAD (its state is given): nothing changed. */
        record NotDead(String state) implements Retry {
        }

        /** There is no such row. */
        record Unknown() implements Retry {
        }
    }

    /**
     * DEAD → PENDING for one row, by an operator's hand (a refund is money owed to a buyer, so a
     * dead one must be retried, never forgotten): a compare-and-set on DEAD, so two operators
     * retrying at once queue it once. The delivery keeps its key, so the receiver still deduplicates.
     */
    public Retry retry(String id) {
        Instant now = clock.instant();
        int rows = db.write(c -> Sql.update(c, "UPDATE outbox SET state = 'PENDING', attempts = 0, next_attempt_at = ?, "
                                               + "retried_at = ?, last_error = 'retried by an operator after: ' || "
                                               + "COALESCE(last_error, '') WHERE id = ? AND state = 'DEAD'",
                                            now, now, id));
        Optional<OutboxQuery.Row> row = OutboxQuery.byId(db, id);
        if (rows == 1) {
            LOG.info("outbox " + row.map(OutboxQuery.Row::idempotencyKey).orElse(id) + " was retried by an operator");
            return new Retry.Queued(row.orElseThrow());
        }
        return row.<Retry>map(r -> new Retry.NotDead(r.state())).orElseGet(Retry.Unknown::new);
    }

    /** Claims lost to another pass since this worker was made: each one a row it read but did not send. */
    long claimsLost() {
        return claimsLost.get();
    }

    /** One call for a row this pass has claimed, and its outcome written; true when the row is SENT. */
    private boolean deliver(Due row) throws InterruptedException {
        String path = pathOf(row.kind());
        int attempt = row.attempts() + 1;
        String error;
        boolean permanent = false;
        try {
            Outside.Answer answer = http.post(path, row.payload(),
                                                      Map.of("Idempotency-Key", row.dedupeKey()), config.callTimeout());
            if (answer.status() >= 200 && answer.status() < 300) {
                markSent(row);
                return true;
            }
            error = "HTTP " + answer.status() + ": " + (answer.body() == null ? "" : answer.body());
            permanent = answer.status() >= 400 && answer.status() < 500 && !RETRIED_4XX.contains(answer.status());
        } catch (IOException e) {
            // A timeout or a reset proves nothing about arrival; the same key makes the next try safe.
            error = switch (Outside.Failure.of(e)) {
                case NO_CONNECTION_IN_TIME -> "could not connect to the receiver in time";
                case CONNECTION_REFUSED -> "could not connect to the receiver";
                case NO_ANSWER_IN_TIME -> "no answer within " + config.callTimeout().toMillis() + " ms";
                case BROKEN -> "the connection broke before the receiver answered";
            };
            LOG.log(Level.FINE, "outbox " + row.dedupeKey() + " attempt " + attempt + ": " + error, e);
        } catch (RuntimeException e) {
            // A request that cannot even be built (a bad URI or header) is our fault, not the receiver's:
            // record it and let the backoff and the attempt limit bound it like any other failure. The row
            // shows a sentence (GET /outbox shows it); the exception is in the log.
            error = "the request could not be sent; the server log says why";
            LOG.log(Level.WARNING, "outbox " + row.dedupeKey() + " attempt " + attempt + " could not be sent", e);
        }
        failed(row, attempt, error, permanent);
        return false;
    }

    private String pathOf(String kind) {
        if (kind.endsWith("-email")) {
            return config.emailPath();
        }
        return "refund".equals(kind) ? config.refundPath() : null;
    }

    private void markSent(Due row) {
        // Not guarded by attempts: the receiver has it, whichever claim made the call.
        int rows = db.write(c -> Sql.update(c, "UPDATE outbox SET state = 'SENT', sent_at = ?, last_error = NULL "
                                               + "WHERE id = ? AND state = 'PENDING'", clock.instant(), row.id()));
        if (rows == 0) {
            // Another claim, after this one's lease ran out, already ended the row (SENT, or DEAD on a refusal).
            LOG.info("outbox " + row.dedupeKey() + " was accepted by its receiver, but the row had already left PENDING");
        }
    }

    private void failed(Due row, int attempt, String error, boolean permanent) {
        Instant now = clock.instant();
        if (permanent) {
            dead(row, attempt, "refused for good: " + error);
        } else if (attempt >= config.maxAttempts()) {
            dead(row, attempt, "gave up after " + attempt + " attempts: " + error);
        } else if (!now.isBefore(row.createdAt().plus(config.giveUpAfter()))) {
            dead(row, attempt, "gave up " + config.giveUpAfter() + " after it was written: " + error);
        } else {
            Instant next = now.plus(retryDelay(attempt, config.backoff(), config.maxBackoff(), ThreadLocalRandom.current()));
            // Guarded by the claim's attempts: a pass whose lease ran out must not move a newer claim's lease.
            db.write(c -> Sql.update(c, "UPDATE outbox SET next_attempt_at = ?, last_error = ? "
                                        + "WHERE id = ? AND state = 'PENDING' AND attempts = ?",
                                     next, truncated(error), row.id(), attempt));
            LOG.log(Level.FINE, () -> "outbox " + row.dedupeKey() + " attempt " + attempt + " failed (" + error
                                      + "); next at " + next);
        }
    }

    private void dead(Due row, int attempts, String reason) {
        int rows = db.write(c -> Sql.update(c, "UPDATE outbox SET state = 'DEAD', last_error = ? "
                                               + "WHERE id = ? AND state = 'PENDING' AND attempts = ?",
                                            truncated(reason), row.id(), attempts));
        if (rows == 1) {
            LOG.warning("outbox " + row.kind() + " " + row.dedupeKey() + " is DEAD and will not be sent: " + reason);
        }
    }

    /** The pause after failed attempt {@code attempt} (1 for the first); see {@link Backoff#jittered}. */
    static Duration retryDelay(int attempt, Duration backoff, Duration maxBackoff, RandomGenerator random) {
        return Backoff.jittered(attempt, backoff, maxBackoff, random);
    }

    private static String truncated(String text) {
        return text.length() <= MAX_ERROR_CHARS ? text : text.substring(0, MAX_ERROR_CHARS - 1) + "…";
    }

    /** Stops the background passes (interrupting a call in flight) and waits for the pass to end. */
    @Override
    public synchronized void close() {
        if (worker != null) {
            worker.close();
        }
    }

    /** A row due, as read: its {@code attempts} is the version its claim compares. */
    record Due(String id, String dedupeKey, String kind, String payload, int attempts, Instant createdAt) {
    }

    private static Due due(ResultSet rs) throws SQLException {
        return new Due(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getInt(5),
                       Sql.instant(rs, 6));
    }
}
