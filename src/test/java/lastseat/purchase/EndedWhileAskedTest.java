package lastseat.purchase;

import lastseat.inventory.Order;
import lastseat.outside.Outside;
import lastseat.payment.PaymentGateway;
import lastseat.support.FakeOutside.Trouble;
import lastseat.support.InProcess;
import lastseat.work.Deadline;
import lastseat.work.Latency;
import lastseat.work.Timeline;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fast tier: a purchase that ends while the reconciler is asking about it. The reconciler leased an
 * unknown payment and looked it up; before the provider answered "nothing for that key", the purchase
 * was released elsewhere (its payment token went with the move). The reconciler must not send the charge
 * again — it has no token to send, and the purchase holds no seats for it — and leaves it as it is.
 */
@Tag("fast")
class EndedWhileAskedTest {
    private final InProcess app = InProcess.start(Map.of("purchase.deadline", "300ms", "payment.max-wait", "300ms"));
    private final AtomicInteger charges = new AtomicInteger();

    @AfterEach
    void close() {
        app.close();
    }

    @Test
    void aPurchaseReleasedWhileItsLookupWasOutIsNotChargedAgain() throws Exception {
        String event = app.newEvent("A1");
        app.outside.trouble(Trouble.LOSE_REQUEST);
        PurchaseOutcome outcome = app.flow.purchase(new Order(event, List.of("A1"), 1, "ada", "ada@example.com", "tok_ok", "demo-shop",
                                                              UUID.randomUUID().toString()),
                                                    Deadline.after(app.config.purchase().deadline(), System.nanoTime()));
        assertThat(outcome).isInstanceOf(PurchaseOutcome.Pending.class);
        String id = app.db.strings("SELECT id FROM purchases WHERE event_id = ?", event).getFirst();
        app.clock.advance(app.config.reconcile().settleTime());
        Reconciler reconciler = new Reconciler(app.purchases, new PaymentGateway(new EndsItWhileAsked(id), app.config.payment(),
                                                                                 Latency.of(app.config.admission().callTime())),
                                               app.config.reconcile(), app.clock);

        reconciler.reconcile();

        assertThat(charges.get()).as("no charge sent again for a purchase that ended").isZero();
        assertThat(app.state(id)).isEqualTo("RELEASED");
        assertThat(app.outside.captures()).isEmpty();
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    /** A provider whose lookup finds nothing, answered after the purchase was released by someone else. */
    private final class EndsItWhileAsked implements Outside {
        private final String id;

        EndsItWhileAsked(String id) {
            this.id = id;
        }

        @Override
        public Answer post(String path, String json, Map<String, String> headers, Deadline deadline) {
            throw new IllegalStateException("the reconciler sends with a timeout, not a deadline");
        }

        @Override
        public Answer post(String path, String json, Map<String, String> headers, Duration timeout) {
            charges.incrementAndGet();
            return new Answer(201, "{\"id\":\"pay_x\",\"status\":\"captured\"}");
        }

        @Override
        public Answer get(String pathAndQuery, Duration timeout) {
            Timeline timeline = new Timeline(app.clock);
            assertThat(app.purchases.release(id, PurchaseState.PAYMENT_UNKNOWN, "released elsewhere meanwhile", timeline,
                                             timeline.start("release"))).isInstanceOf(Purchases.Moved.Done.class);
            return new Answer(404, "{\"error\":\"no payment with that idempotency key\"}");
        }
    }
}
