package lastseat.drill;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The drill endpoints are off unless {@code drills.enabled}: a deployment that never asked for them
 * answers 404 and runs nothing. An app of its own, because every other test runs with drills on.
 */
class DrillsOffTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("drills.enabled", "false"));

    @Test
    void theDrillsAreOffUnlessEnabled() {
        long events = app.db().count("SELECT COUNT(*) FROM events");

        Answer invariants = app.client().get("/drills/invariants?event=x");
        Answer stampede = app.client().post("/drills/stampede", null, "{\"mode\":\"unsafe\",\"buyers\":10}");

        assertThat(invariants.status()).isEqualTo(404);
        assertThat(invariants.json().path("type").asText()).isEqualTo("urn:lastseat:problem:drills-disabled");
        assertThat(stampede.status()).isEqualTo(404);
        assertThat(stampede.json().path("type").asText()).as("no such route at all (a route that is off says drills-disabled): "
                                                             + "the stampede's unsafe booking lives in the drills")
                .isEqualTo("urn:lastseat:problem:not-found");
        assertThat(app.db().count("SELECT COUNT(*) FROM events")).isEqualTo(events);
        Invariants.resourcesCameBack(app);
    }
}
