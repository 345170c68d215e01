package lastseat.purchase;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A purchase that waited longer than purchase.shed-after before it could reserve is shed: 503
 * overloaded with Retry-After, nothing reserved, no outside call, its key let go so a retry runs.
 * (shed-after 0 ms makes every purchase one that waited too long.)
 */
class OverloadTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("purchase.shed-after", "0ms"));

    @Test
    void aPurchaseThatWaitedTooLongIsShedBeforeItTakesASeat() {
        String event = app.newEvent("A1");
        String key = UUID.randomUUID().toString();

        Answer answer = app.client().purchaseSeats(key, event, "A1");
        Answer retry = app.client().purchaseSeats(key, event, "A1");

        assertThat(answer.status()).as(answer.toString()).isEqualTo(503);
        assertThat(answer.json().path("type").asText()).isEqualTo("urn:lastseat:problem:overloaded");
        assertThat(answer.header("Retry-After")).isEqualTo("1");
        assertThat(retry.header("Idempotent-Replayed")).as("the key was let go: the retry ran again").isNull();
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).isZero();
        assertThat(app.purchaseCalls()).isEmpty();
        Invariants.nothingHeld(app, event);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }
}
