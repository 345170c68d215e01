package lastseat.drill;

import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import lastseat.config.DrillsConfig;
import lastseat.db.Database;
import lastseat.inventory.Inventory;
import lastseat.purchase.Purchases;
import lastseat.web.Bodies;
import lastseat.web.Json;
import lastseat.web.Problem;
import lastseat.web.Reply;

import java.time.Clock;
import java.time.Duration;

/**
 * {@code POST /drills/stampede} and {@code GET /drills/invariants?event=…}, only when
 * {@code drills.enabled=true}; otherwise both answer 404 saying the drills are off.
 *
 * <p>Hazard: the stampede's unsafe mode double-books the seats of its own drill event on purpose;
 * production configuration leaves the drills off.
 */
public final class DrillRoutes implements HttpService {
    private static final int MAX_BODY_BYTES = 1024;
    private final DrillsConfig config;
    private final StampedeRun stampede;
    private final InvariantCheck invariants;

    /** {@code sweepGrace} and {@code recoveredWithin}: see {@link InvariantCheck}. */
    public DrillRoutes(DrillsConfig config, Database db, Inventory inventory, Purchases purchases, Clock clock, Duration sweepGrace,
                       Duration recoveredWithin) {
        this.config = config;
        this.stampede = new StampedeRun(db, inventory, purchases, config);
        this.invariants = new InvariantCheck(db, clock, sweepGrace, recoveredWithin);
    }

    @Override
    public void routing(HttpRules rules) {
        rules.post("/stampede", this::stampede)
             .get("/invariants", this::invariants);
    }

    private void stampede(ServerRequest request, ServerResponse response) {
        requireEnabled();
        Bodies.requireJson(request);
        StampedeRun.Request body = Json.read(Bodies.read(request, MAX_BODY_BYTES), StampedeRun.Request.class);
        try {
            Reply.json(200, stampede.run(body), null).send(response);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Problem(503, "shutting-down", "Shutting down", "The server is stopping; the stampede was abandoned");
        }
    }

    private void invariants(ServerRequest request, ServerResponse response) {
        requireEnabled();
        String event = request.query().first("event")
                .orElseThrow(() -> Problem.badRequest("missing-parameter", "Name the event: /drills/invariants?event=<id>"));
        InvariantCheck.Result result = invariants.check(event)
                .orElseThrow(() -> Problem.notFound("unknown-event", "There is no event " + event));
        Reply.json(200, result, null).send(response);
    }

    private void requireEnabled() {
        if (!config.enabled()) {
            throw Problem.notFound("drills-disabled", "The drills are off; start the server with drills.enabled=true (bin/run and bin/drill do)");
        }
    }
}
