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

/**
 * {@code GET /outbox?state=dead|pending|sent}: how many rows are in that state and the first
 * {@value #LIMIT} of them (PENDING next-due first, SENT and DEAD newest first), without payloads.
 * {@code state} is required; any other value is a 400 problem. {@code POST /outbox/{id}/retry}
 * queues a DEAD row again (200 with the row; 409 when it is not DEAD; 404 when there is none):
 * how an operator sends a refund that was given up on.
 *
 * <p>Hazard: an operator's view with no authentication of its own (like {@code /observe}): it
 * shows purchase ids and delivery errors, so it belongs behind the operators' network boundary.
 */
public final class OutboxRoutes implements HttpService {
    static final int LIMIT = 100;

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
        int count = OutboxQuery.count(db, state);
        List<Item> items = OutboxQuery.list(db, state, LIMIT).stream().map(Item::of).toList();
        Reply.json(200, new Listing(state, count, LIMIT, items), null).send(response);
    }

    record Listing(String state, int count, int limit, List<Item> items) {
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
