package lastseat.drill;

import com.fasterxml.jackson.databind.JsonNode;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The stampede of {@code POST /drills/stampede}: the unsafe booking step must double-book under the
 * race (or the race did not happen and the safe run would prove nothing), and the safe one must
 * sell the seat once under the same race.
 */
class StampedeTest {
    private static final int BUYERS = 200;

    @RegisterExtension
    static final LastseatApp app = LastseatApp.shared();

    @Test
    void unsafeBookingTellsManyBuyersTheyHaveTheOneSeat() {
        JsonNode report = stampede("unsafe", BUYERS);

        assertThat(report.path("doubleCount").asInt()).as("the race happened").isGreaterThanOrEqualTo(1);
        List<String> toldYes = names(report.path("perSeat").path("A1").path("toldYes"));
        assertThat(toldYes).hasSizeGreaterThan(1).hasSize(report.path("confirmed").asInt());
        assertThat(toldYes).as("the seat's final owner is one of those told yes; the others were lied to")
                .contains(report.path("perSeat").path("A1").path("owner").asText());
        Invariants.resourcesCameBack(app);
    }

    @Test
    void safeBookingSellsTheSeatOnceUnderTheSameRace() {
        JsonNode report = stampede("safe", BUYERS);

        assertThat(report.path("doubleCount").asInt()).isZero();
        assertThat(report.path("confirmed").asInt()).isEqualTo(1);
        assertThat(report.path("refused").asInt()).isEqualTo(BUYERS - 1);
        JsonNode seat = report.path("perSeat").path("A1");
        assertThat(names(seat.path("toldYes"))).containsExactly(seat.path("owner").asText());
        List<String> refusals = new ArrayList<>();
        report.path("answers").forEach(a -> {
            if (!a.path("confirmed").asBoolean()) {
                refusals.add(a.path("message").asText());
            }
        });
        assertThat(refusals).hasSize(BUYERS - 1).containsOnly("A1 is already taken");
        Invariants.resourcesCameBack(app);
    }

    @Test
    void severalSeatsAreEachSoldOnce() {
        JsonNode safe = stampede("safe", 60, 3);
        JsonNode unsafe = stampede("unsafe", 60, 3);

        assertThat(safe.path("confirmed").asInt()).isEqualTo(3);
        assertThat(safe.path("doubleCount").asInt()).isZero();
        assertThat(unsafe.path("doubleCount").asInt()).isEqualTo(3);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aBadStampedeRequestIsRefusedAndCreatesNothing() {
        long events = app.db().count("SELECT COUNT(*) FROM events");

        List<Answer> answers = List.of(
                app.client().post("/drills/stampede", null, "{\"mode\":\"maybe\",\"buyers\":10}"),
                app.client().post("/drills/stampede", null, "{\"mode\":\"safe\",\"buyers\":1}"),
                app.client().post("/drills/stampede", null, "{\"mode\":\"safe\",\"buyers\":1000000}"),
                app.client().post("/drills/stampede", null, "{\"mode\":\"safe\",\"buyers\":10,\"seats\":10}"),
                app.client().post("/drills/stampede", null, "{\"mode\":\"safe\",\"buyers\":10,\"color\":\"red\"}"),
                app.client().post("/drills/stampede", null, "{\"mode\":"));

        assertThat(answers).allSatisfy(a -> {
            assertThat(a.status()).as(a.toString()).isEqualTo(400);
            assertThat(a.header("Content-Type")).isEqualTo("application/problem+json");
        });
        assertThat(answers.getFirst().json().path("detail").asText()).contains("unsafe").contains("safe");
        assertThat(app.db().count("SELECT COUNT(*) FROM events")).isEqualTo(events);
        Invariants.resourcesCameBack(app);
    }

    private static JsonNode stampede(String mode, int buyers) {
        return stampede(mode, buyers, 1);
    }

    private static JsonNode stampede(String mode, int buyers, int seats) {
        Answer answer = app.client().stampede(mode, buyers, seats);
        assertThat(answer.status()).as(answer.toString()).isEqualTo(200);
        return answer.json();
    }

    private static List<String> names(JsonNode array) {
        List<String> names = new ArrayList<>();
        array.forEach(n -> names.add(n.asText()));
        return names;
    }
}
