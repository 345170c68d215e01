package lastseat;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** What an operator sees: health with the database check, metrics with purchases, permits and pool. */
class ObserveTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.shared();

    @Test
    void healthIsUpWithTheDatabaseCheck() {
        Answer health = app.client().get("/observe/health");

        assertThat(health.status()).isEqualTo(200);
        assertThat(health.json().path("status").asText()).isEqualTo("UP");
        assertThat(health.json().path("checks").findValuesAsText("name")).contains("database");
        Invariants.resourcesCameBack(app);
    }

    @Test
    void metricsCountPurchasesByStatusAndReasonTimeThemAndTheOutsideCallsAndShowFreePermitsAndBusyConnections() {
        String event = app.newEvent("A1", "A2");
        app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
        app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
        app.client().purchaseQuantity(UUID.randomUUID().toString(), event, 2, "ada");

        String metrics = app.client().metrics();

        // seats-taken and sold-out are both 409: the reason tells them apart.
        assertThat(metrics).containsPattern("lastseat_purchases_total\\{[^}]*reason=\"confirmed\"[^}]*status=\"201\"[^}]*} [1-9]")
                           .containsPattern("lastseat_purchases_total\\{[^}]*reason=\"seats-taken\"[^}]*status=\"409\"[^}]*} [1-9]")
                           .containsPattern("lastseat_purchases_total\\{[^}]*reason=\"sold-out\"[^}]*status=\"409\"[^}]*} [1-9]")
                           .containsPattern("lastseat_purchase_seconds_count\\{[^}]*reason=\"confirmed\"[^}]*} [1-9]")
                           .containsPattern("lastseat_purchase_seconds_sum\\{[^}]*reason=\"confirmed\"[^}]*} [0-9]")
                           .containsPattern("lastseat_outside_seconds_count\\{[^}]*outcome=\"2xx\"[^}]*service=\"fraud\"[^}]*} [1-9]")
                           .containsPattern("lastseat_outside_seconds_count\\{[^}]*service=\"tax\"[^}]*} [1-9]")
                           .containsPattern("lastseat_outside_seconds_count\\{[^}]*service=\"payments\"[^}]*} [1-9]")
                           .containsPattern("lastseat_payment_bulkhead_available\\{[^}]*} 20.0")
                           .contains("lastseat_db_pool_active");
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }
}
