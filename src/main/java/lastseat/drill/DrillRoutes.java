package lastseat.drill;

import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import lastseat.config.DrillsConfig;
import lastseat.db.Database;
import lastseat.web.Problem;
import lastseat.web.Reply;

import java.time.Clock;
import java.time.Duration;

/**
 * {@code GET /drills/invariants?event=…}, only when {@code drills.enabled=true}; otherwise 404 saying
 * the drills are off.
 *
 * <p>Hazard: it reads a whole event's seats and purchases in one go; production configuration leaves
 * the drills off. (The stampede's unsafe booking is not here: it lives in the drills, on a database of
 * their own.)
 */
public final class DrillRoutes implements HttpService {
    private final DrillsConfig config;
    private final InvariantCheck invariants;

    /** {@code sweepGrace} and {@code recoveredWithin}: see {@link InvariantCheck}. */
    public DrillRoutes(DrillsConfig config, Database db, Clock clock, Duration sweepGrace, Duration recoveredWithin) {
        this.config = config;
        this.invariants = new InvariantCheck(db, clock, sweepGrace, recoveredWithin);
    }

    @Override
    public void routing(HttpRules rules) {
        rules.get("/invariants", this::invariants);
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
