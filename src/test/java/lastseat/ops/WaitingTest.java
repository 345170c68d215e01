package lastseat.ops;

import com.fasterxml.jackson.databind.JsonNode;
import lastseat.db.Sql;
import lastseat.outbox.Outbox;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Instance;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the operator's page lists as waiting for someone ({@code GET /ops/api/waiting}): a dead refund
 * is money owed to a buyer, so it is listed before dead emails, however many of them died after it.
 */
class WaitingTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.shared();

    @Test
    void aDeadRefundIsListedFirstHoweverManyEmailsDiedAfterIt() {
        String refunded = UUID.randomUUID().toString();
        List<String> purchases = new ArrayList<>(List.of(refunded));
        Instant written = Instant.now().minusSeconds(60);
        // Written DEAD in the transaction that adds them, so the app's outbox worker never sees them due.
        app.services().db().inTransaction(c -> {
            Outbox.add(c, "refund", refunded, "{\"paymentId\":\"pay_1\"}", written);
            for (int i = 1; i <= 120; i++) {
                String purchase = UUID.randomUUID().toString();
                purchases.add(purchase);
                Outbox.add(c, "confirmation-email", purchase, "{\"to\":\"ada@example.com\"}", written.plusMillis(i));
            }
            for (String purchase : purchases) {
                Sql.update(c, "UPDATE outbox SET state = 'DEAD' WHERE purchase_id = ?", purchase);
            }
            return null;
        });
        try {
            Instance at = app.client().instance();

            Answer waiting = app.client().send("GET", at.admin(), "/ops/api/waiting", at.operatorKey(), null, null);

            assertThat(waiting.status()).isEqualTo(200);
            JsonNode dead = waiting.json().path("deadOutbox");
            assertThat(dead).hasSize(100);
            assertThat(dead.get(0).path("kind").asText()).isEqualTo("refund");
            assertThat(dead.get(0).path("purchaseId").asText()).isEqualTo(refunded);
            List<String> kinds = new ArrayList<>();
            dead.forEach(row -> kinds.add(row.path("kind").asText()));
            assertThat(kinds).as("the refund once, then the newest emails").containsOnlyOnce("refund");
        } finally {
            app.services().db().inTransaction(c -> {
                for (String purchase : purchases) {
                    Sql.update(c, "DELETE FROM outbox WHERE purchase_id = ?", purchase);
                }
                return null;
            });
        }
        Invariants.resourcesCameBack(app);
    }
}
