package lastseat.purchase;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Together;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Many buyers at once over real HTTP, released together by a latch. The deadline is 3 s here: the
 * race is about who gets the seat, and two hundred requests on two cores can make the winner's own
 * checks slower than 800 ms (it would then rightly get 504, and another buyer the seat).
 */
class ConcurrencyTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("purchase.deadline", "3s"));

    @Test
    void lastSeatIsSoldOnceWhenTwoHundredBuyersArriveTogether() {
        String event = app.newEvent("A1");

        List<Answer> answers = Together.run(200, i -> app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1"));

        Map<Integer, Long> byStatus = countByStatus(answers);
        assertThat(byStatus).as(byStatus + " " + answers.stream().filter(a -> a.status() != 409).toList())
                .containsEntry(201, 1L).containsEntry(409, 199L);
        assertThat(answers.stream().filter(a -> a.status() == 409))
                .allSatisfy(a -> assertThat(a.json().path("detail").asText()).isEqualTo("A1 is already taken"));
        assertThat(app.client().event(event).path("sold").asInt()).isEqualTo(1);
        Invariants.nothingHeld(app, event);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    private static Map<Integer, Long> countByStatus(List<Answer> answers) {
        return answers.stream().collect(Collectors.groupingBy(Answer::status, Collectors.counting()));
    }
}
