package lastseat.purchase;

import lastseat.stubs.InFlight;
import lastseat.support.Client;
import lastseat.support.Invariants;
import lastseat.support.TestApp;
import lastseat.support.Together;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/** Many buyers at once over real HTTP, released together by a latch. */
class ConcurrencyTest {
    private TestApp app;

    @BeforeEach
    void setUp() {
        app = TestApp.shared();
    }

    @Test
    void lastSeatIsSoldOnceWhenAHundredBuyersArriveTogether() {
        String event = app.newEvent("A1");

        List<Client.Answer> answers = Together.run(100, i -> app.client.purchase(UUID.randomUUID().toString(), event, "A1"));

        Map<Integer, Long> byStatus = countByStatus(answers);
        assertThat(byStatus).as(byStatus.toString()).containsEntry(201, 1L).containsEntry(409, 99L);
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
