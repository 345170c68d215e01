package lastseat.outbox;

import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import lastseat.db.Database;
import lastseat.web.Problem;
import lastseat.web.Reply;
import lastseat.web.Text;

import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * {@code GET /outbox?state=dead|pending|sent[&kind=refund|confirmation-email|refund-email][&offset=N]}: how many rows are in
 * that state (of that kind) and {@value #LIMIT} of them from {@code offset} on (PENDING next-due first,
 * SENT and DEAD newest first), without payloads; the count and the offset page through all of them.
 * {@code state} is required; any other value, kind or offset is a 400 problem. {@code POST /outbox/{id}/retry}
 * queues a DEAD row again (200 with the row; 409 when it is not DEAD; 404 when there is none):
 * how an operator sends a refund that was given up on.
 *
 * <p>Hazard: an operator's view with no authentication of its own (like {@code /observe}): it
 * shows purchase ids and delivery errors, so it belongs behind the operators' network boundary.
 */
public final class OutboxRoutes implements HttpService {
    static final int LIMIT = 100;
    static final int MAX_OFFSET = 1_000_000;

    private final Database db;
    private final OutboxWorker worker;

    public OutboxRoutes(Database db, OutboxWorker worker) {
        this.db = db;
        this.worker = worker;
    }

    @Override
    public void routing(HttpRules rules) {
        rules.get("/", this::list)
             .post("/{id}/retry", this::retry);
    }

    private void retry(ServerRequest request, ServerResponse response) {
        String id = request.path().pathParameters().get("id");
        if (!Text.storable(id, 36)) {
            throw Problem.notFound("unknown-outbox-row", "There is no outbox row with that id");
        }
        switch (worker.retry(id)) {
            case OutboxWorker.Retry.Queued queued -> Reply.json(200, Item.of(queued.row()), null).send(response);
            case OutboxWorker.Retry.NotDead notDead -> throw new Problem(409, "outbox-row-not-dead", "Not dead",
                    "Outbox row " + id + " is " + notDead.state() + "; only a DEAD row can be retried",
                    java.util.Map.of("state", notDead.state()));
            case OutboxWorker.Retry.Unknown unknown -> throw Problem.notFound("unknown-outbox-row", "There is no outbox row " + id);
        }
    }

    private void list(ServerRequest request, ServerResponse response) {
        String asked = request.query().first("state")
                .orElseThrow(() -> Problem.badRequest("missing-parameter", "Name the state: /outbox?state=dead, pending or sent"));
        String state = asked.toUpperCase(Locale.ROOT);
        if (!OutboxQuery.STATES.contains(state)) {
            // Echo a short value only: the detail is read by people, not a place to reflect anything sent.
            String shown = asked.length() <= 20 ? "'" + asked + "'" : "a value of " + asked.length() + " characters";
            throw Problem.badRequest("invalid-parameter", "state must be dead, pending or sent, got " + shown);
        }
        Optional<String> kind = request.query().first("kind").asOptional();
        if (kind.isPresent() && !OutboxQuery.KINDS.contains(kind.get())) {
            throw Problem.badRequest("invalid-parameter", "kind must be confirmation-email, refund-email or refund");
        }
        int offset = offset(request.query().first("offset").asOptional());
        int count = OutboxQuery.count(db, state, kind);
        List<Item> items = OutboxQuery.list(db, state, kind, offset, LIMIT).stream().map(Item::of).toList();
        Reply.json(200, new Listing(state, kind.orElse(null), count, offset, LIMIT, items), null).send(response);
    }

    /** {@code offset}: how many rows to skip, 0 to {@value #MAX_OFFSET}. */
    private static int offset(Optional<String> asked) {
        if (asked.isEmpty()) {
            return 0;
        }
        if (!asked.get().matches("[0-9]{1,7}") || Integer.parseInt(asked.get()) > MAX_OFFSET) {
            throw Problem.badRequest("invalid-parameter", "offset must be a whole number from 0 to " + MAX_OFFSET);
        }
        return Integer.parseInt(asked.get());
    }

    /** {@code kind} is null when every kind is listed; {@code count} is of the rows the filter selects. */
    record Listing(String state, String kind, int count, int offset, int limit, List<Item> items) {
    }

    record Item(String id, String kind, String purchaseId, String idempotencyKey, int attempts, String lastError,
                String createdAt, String nextAttemptAt, String sentAt) {
        static Item of(OutboxQuery.Row row) {
            return new Item(row.id(), row.kind(), row.purchaseId(), row.idempotencyKey(), row.attempts(), row.lastError(),
                            text(row.createdAt()), text(row.nextAttemptAt()), text(row.sentAt()));
        }

        private static String text(Instant instant) {
            return instant == null ? null : instant.toString();
        }
    }
}
