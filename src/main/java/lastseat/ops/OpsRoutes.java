package lastseat.ops;

import io.helidon.http.sse.SseEvent;
import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import io.helidon.webserver.sse.SseSink;
import lastseat.config.OpsConfig;
import lastseat.db.Database;
import lastseat.inventory.Inventory;
import lastseat.outbox.OutboxQuery;
import lastseat.purchase.PurchaseState;
import lastseat.purchase.PurchaseView;
import lastseat.purchase.Purchases;
import lastseat.web.Problem;
import lastseat.web.Reply;
import lastseat.web.Text;

import java.io.UncheckedIOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code /ops/api} on the admin port, what the operator's page ({@code /ops/}) reads, with the
 * operator's key: an event's seats as server-sent events ({@code GET /events/{id}/seats}: a
 * {@code snapshot}, then each {@code change}), a purchase with its timeline ({@code GET /purchases/{id}}),
 * and what waits for someone ({@code GET /waiting}: purchases whose payment is unknown or unresolved, and
 * dead outbox rows, each with its age).
 *
 * <p>Hazard: a stream holds its request's thread (a virtual one) and one of {@code ops.max-streams}
 * places until the viewer leaves or the server stops; past the places, 503 (with the Retry-After of
 * every 503, {@code purchase.retry-after}).
 */
public final class OpsRoutes implements HttpService, AutoCloseable {
    private static final int MAX_WAITING = 100;
    private final SeatWatch watch;
    private final Inventory inventory;
    private final Purchases purchases;
    private final Database db;
    private final OpsConfig config;
    private final Clock clock;

    public OpsRoutes(Inventory inventory, Purchases purchases, Database db, OpsConfig config, Clock clock) {
        this.watch = new SeatWatch(inventory, config);
        this.inventory = inventory;
        this.purchases = purchases;
        this.db = db;
        this.config = config;
        this.clock = clock;
    }

    @Override
    public void routing(HttpRules rules) {
        rules.get("/events/{id}/seats", this::seats)
             .get("/purchases/{id}", this::purchase)
             .get("/waiting", this::waiting);
    }

    private void seats(ServerRequest request, ServerResponse response) {
        String id = request.path().pathParameters().get("id");
        // An id no event can have (a NUL, too long) is not looked up, PostgreSQL would refuse the query itself,
        // and no id is repeated in the answer: what the path held is not ours to echo.
        if (!Text.storable(id, 64) || inventory.find(id, false).isEmpty()) {
            throw Problem.notFound("unknown-event", "There is no event with that id");
        }
        Optional<SeatWatch.Viewer> watching = watch.watch(id);
        if (watching.isEmpty()) {
            // Its Retry-After is the edge's rule for every 503, not this route's to choose.
            throw new Problem(503, "too-many-streams", "Too many streams",
                              "This server already streams " + config.maxStreams() + " seat maps; try again after Retry-After");
        }
        try (SeatWatch.Viewer viewer = watching.get(); SseSink sink = response.sink(SseSink.TYPE)) {
            while (true) {
                Optional<SeatWatch.Message> message = viewer.next(config.keepAlive());
                if (message.isEmpty()) {
                    sink.emit(SseEvent.builder().comment("still here").build());
                } else if (message.get() == SeatWatch.END) {
                    return;
                } else {
                    sink.emit(SseEvent.builder().name(message.get().name()).data(message.get().data()).build());
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (UncheckedIOException viewerLeft) {
            // The page closed or reloaded: its place is given back by the viewer's close.
        }
    }

    private void purchase(ServerRequest request, ServerResponse response) {
        String id = request.path().pathParameters().get("id");
        PurchaseView view = (Text.storable(id, 36) ? purchases.find(id) : Optional.<PurchaseView>empty())
                .orElseThrow(() -> Problem.notFound("unknown-purchase", "There is no purchase with that id"));
        Reply.json(200, view, null).send(response);
    }

    private void waiting(ServerRequest request, ServerResponse response) {
        List<Purchases.Listed> payments = new ArrayList<>(purchases.list(PurchaseState.PAYMENT_UNKNOWN, Optional.empty()));
        payments.addAll(purchases.list(PurchaseState.PAYMENT_UNRESOLVED, Optional.empty()));
        Instant now = clock.instant();
        // Dead refunds first: a burst of dead emails must not push money owed to a buyer off the page.
        List<Map<String, Object>> dead = OutboxQuery.deadRefundsFirst(db, MAX_WAITING).stream().map(row -> {
            Map<String, Object> item = new LinkedHashMap<>();
            item.put("id", row.id());
            item.put("kind", row.kind());
            item.put("purchaseId", row.purchaseId());
            item.put("attempts", row.attempts());
            item.put("ageSeconds", Duration.between(row.createdAt(), now).toSeconds());
            return item;
        }).toList();
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("payments", payments);
        body.put("deadOutbox", dead);
        Reply.json(200, body, null).send(response);
    }

    /** Seat-map streams open now, for the tests. */
    int openStreams() {
        return watch.open();
    }

    /** Events whose seats are being read now, for the tests. */
    int readers() {
        return watch.readers();
    }

    /** Ends every seat-map stream: before the server stops, so that it waits for none of them. */
    @Override
    public void close() {
        watch.close();
    }
}
