package lastseat.purchase;

import lastseat.support.Client;
import lastseat.support.Invariants;
import lastseat.support.TestApp;
import lastseat.testkit.Together;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

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
    private static TestApp app;

    @BeforeAll
    static void start() {
        app = TestApp.start(Map.of("purchase.deadline", "3s", "purchase.shed-after", "2s"));
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    @Test
    void lastSeatIsSoldOnceWhenTwoHundredBuyersArriveTogether() {
        String event = app.newEvent("A1");

        List<Client.Answer> answers = Together.run(200, i -> app.client.purchase(UUID.randomUUID().toString(), event, "A1"));

        Map<Integer, Long> byStatus = countByStatus(answers);
        assertThat(byStatus).as(byStatus + " " + answers.stream().filter(a -> a.status() != 409).toList())
                .containsEntry(201, 1L).containsEntry(409, 199L);
        assertThat(answers.stream().filter(a -> a.status() == 409))
                .allSatisfy(a -> assertThat(a.json().path("detail").asText()).isEqualTo("A1 is already taken"));
        assertThat(app.client.event(event).path("sold").asInt()).isEqualTo(1);
        Invariants.nothingHeld(app, event);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    private static Map<Integer, Long> countByStatus(List<Client.Answer> answers) {
        return answers.stream().collect(Collectors.groupingBy(Client.Answer::status, Collectors.counting()));
    }
}
