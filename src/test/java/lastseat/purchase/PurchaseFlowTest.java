package lastseat.purchase;

import lastseat.inventory.Order;
import lastseat.purchase.PurchaseOutcome.Refusal;
import lastseat.support.FakeOutside;
import lastseat.support.FakeOutside.Trouble;
import lastseat.support.Leaks;
import lastseat.support.InProcess;
import lastseat.work.Deadline;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.ConnectException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fast tier: the purchase flow and the jobs that finish its work — reserve, check, pay, confirm,
 * release; the reconciler; the sweeper; the outbox — driven in-process against {@link
 * lastseat.support.FakeOutside} and a test clock. Every way a payment can end is here as a scripted
 * trouble, with the provider's ledger as the judge (money has three endings: captured, refused by
 * the provider, or unknown until the reconciler settles it).
 */
@Tag("fast")
class PurchaseFlowTest {
    private final InProcess app = InProcess.start(Map.of("purchase.deadline", "300ms",
                                                         "payment.max-wait", "300ms"));

    @AfterEach
    void close() {
        app.close();
    }

    @Test
    void aPurchaseThatPassesItsChecksIsCapturedOnceConfirmedAndAnnounced() throws Exception {
        String event = app.newEvent("A1", "A2");

        PurchaseOutcome outcome = buy(event, "ada", "tok_ok", "A1");

        assertThat(outcome).isInstanceOfSatisfying(PurchaseOutcome.Confirmed.class, confirmed -> {
            assertThat(confirmed.purchase().state()).isEqualTo("CONFIRMED");
            assertThat(confirmed.purchase().tickets()).hasSize(1);
        });
        assertThat(app.outside.captures()).hasSize(1);
        assertThat(app.outbox.deliverDue()).isEqualTo(1);
        // The two checks run side by side, so either may reach its service first; the payment waits for both.
        List<String> calls = app.outside.calls();
        assertThat(calls.subList(0, 2)).containsExactlyInAnyOrder("POST /fraud/checks", "POST /tax/quotes");
        assertThat(calls.subList(2, calls.size())).containsExactly("POST /payments", "POST /emails");
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aFraudDeclineReleasesTheSeatsAndSendsNoPayment() throws Exception {
        String event = app.newEvent("A1");

        PurchaseOutcome outcome = buy(event, "fraudster", "tok_ok", "A1");

        assertThat(outcome).isEqualTo(new PurchaseOutcome.Refused(new Refusal.FraudDeclined("buyer is on the block list")));
        assertThat(app.db.strings("SELECT state FROM purchases WHERE event_id = ?", event)).containsExactly("RELEASED");
        assertThat(app.outside.calls()).doesNotContain("POST /payments");
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aCheckServiceThatIsDownRefusesThePurchaseAndSendsNoPayment() throws Exception {
        String event = app.newEvent("A1");
        app.outside.down("tax");

        PurchaseOutcome outcome = buy(event, "ada", "tok_ok", "A1");

        assertThat(outcome).isEqualTo(new PurchaseOutcome.Refused(new Refusal.CheckUnavailable("tax", "it answered 503")));
        assertThat(app.outside.calls()).doesNotContain("POST /payments");
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aCheckServiceThatFailsIsNamedWithWhatFailedTheConnectionTheWaitOrTheExchange() throws Exception {
        Map<IOException, String> said = new LinkedHashMap<>();
        said.put(new HttpConnectTimeoutException("no connection within the connect timeout"), "it could not be reached");
        said.put(new ConnectException("connection refused"), "it could not be reached");
        said.put(new HttpTimeoutException("no answer within 900 ms"), "it did not answer in time");
        said.put(new IOException("connection reset"), "the exchange failed before an answer");
        for (Map.Entry<IOException, String> failure : said.entrySet()) {
            String event = app.newEvent("A1");
            app.outside.failing("fraud", failure.getKey());

            PurchaseOutcome outcome = buy(event, "ada", "tok_ok", "A1");

            assertThat(outcome).as(failure.getKey().toString())
                               .isEqualTo(new PurchaseOutcome.Refused(new Refusal.CheckUnavailable("fraud", failure.getValue())));
            assertThat(app.outside.calls()).doesNotContain("POST /payments");
            app.invariantsHold(event);
            app.resourcesCameBack(event);
        }
    }

    @Test
    void aCheckThatOutlivesTheDeadlineIsCancelledAndTheSeatsComeBackInTime() throws Exception {
        String event = app.newEvent("A1");
        app.outside.hangChecks();
        long start = System.nanoTime();

        PurchaseOutcome outcome = buy(event, "ada", "tok_ok", "A1");

        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("answered within the deadline and its slack")
                .isLessThan(app.config.purchase().deadline().plusMillis(400));
        assertThat(outcome).isInstanceOfSatisfying(PurchaseOutcome.Refused.class,
                refused -> assertThat(refused.why()).isInstanceOf(Refusal.DeadlinePassed.class));
        assertThat(app.outside.interruptedCalls()).as("the hanging call saw its cancellation").isEqualTo(1);
        assertThat(app.outside.calls()).doesNotContain("POST /payments");
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aDeclinedCardReleasesTheSeatsAndCapturesNothing() throws Exception {
        String event = app.newEvent("A1");

        PurchaseOutcome outcome = buy(event, "ada", "tok_declined", "A1");

        assertThat(outcome).isEqualTo(new PurchaseOutcome.Refused(new Refusal.PaymentDeclined("card_declined")));
        assertThat(app.outside.captures()).isEmpty();
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aRefusedConnectionReleasesTheSeatsBecauseNoRequestLeft() throws Exception {
        String event = app.newEvent("A1");
        app.outside.trouble(Trouble.REFUSE_CONNECTION);

        PurchaseOutcome outcome = buy(event, "ada", "tok_ok", "A1");

        assertThat(outcome).isInstanceOfSatisfying(PurchaseOutcome.Refused.class,
                refused -> assertThat(refused.why()).isInstanceOf(Refusal.PaymentNotAttempted.class));
        assertThat(app.db.strings("SELECT state FROM purchases WHERE event_id = ?", event)).containsExactly("RELEASED");
        assertThat(app.outside.captures()).isEmpty();
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aConnectionBrokenAfterTheCaptureIsSettledByAskingAgainWithTheSameKey() throws Exception {
        String event = app.newEvent("A1");
        app.outside.trouble(Trouble.BREAK_AFTER_ACTING);

        PurchaseOutcome outcome = buy(event, "ada", "tok_ok", "A1");

        assertThat(outcome).isInstanceOf(PurchaseOutcome.Confirmed.class);
        assertThat(app.outside.calls()).filteredOn("POST /payments"::equals).hasSize(2);
        assertThat(app.outside.captures()).as("the same key charges once").hasSize(1);
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void anAnswerLostAfterTheCaptureIsPendingUntilTheReconcilerConfirmsIt() throws Exception {
        String event = app.newEvent("A1");
        app.outside.trouble(Trouble.LOSE_ANSWER);

        PurchaseOutcome outcome = buy(event, "ada", "tok_ok", "A1");

        assertThat(outcome).isInstanceOf(PurchaseOutcome.Pending.class);
        String id = onlyPurchase(event);
        assertThat(app.state(id)).isEqualTo("PAYMENT_UNKNOWN");
        assertThat(app.outside.captures()).hasSize(1);
        app.invariantsHold(event);

        settledByTheReconciler(id, event);
    }

    @Test
    void aPurchaseWhoseAnswerIsLostIsNotAskedAboutBeforeItsSettleTime() throws Exception {
        String event = app.newEvent("A1");
        app.outside.trouble(Trouble.LOSE_ANSWER);
        buy(event, "ada", "tok_ok", "A1");
        String id = onlyPurchase(event);

        app.clock.advance(app.config.reconcile().settleTime().minusMillis(1));
        app.workers.reconcileNow();

        assertThat(app.state(id)).isEqualTo("PAYMENT_UNKNOWN");
        assertThat(app.outside.calls()).doesNotContain("GET /payments");
        app.invariantsHold(event);
    }

    @Test
    void aRequestLostOnTheWayIsSentAgainByTheReconcilerAndChargedOnce() throws Exception {
        String event = app.newEvent("A1");
        app.outside.trouble(Trouble.LOSE_REQUEST);

        PurchaseOutcome outcome = buy(event, "ada", "tok_ok", "A1");

        assertThat(outcome).as("a timed-out request may have arrived: never 'nothing was charged'")
                .isInstanceOf(PurchaseOutcome.Pending.class);
        assertThat(app.outside.captures()).isEmpty();
        String id = onlyPurchase(event);

        settledByTheReconciler(id, event);
        assertThat(app.outside.calls()).endsWith("GET /payments", "POST /payments");
    }

    @Test
    void aServerErrorAfterEveryCaptureAttemptLeavesThePaymentUnknownNotRefused() throws Exception {
        String event = app.newEvent("A1");
        app.outside.trouble(Trouble.FAIL_AFTER_ACTING, Trouble.FAIL_AFTER_ACTING);

        PurchaseOutcome outcome = buy(event, "ada", "tok_ok", "A1");

        assertThat(outcome).isInstanceOf(PurchaseOutcome.Pending.class);
        String id = onlyPurchase(event);
        assertThat(app.state(id)).isEqualTo("PAYMENT_UNKNOWN");

        settledByTheReconciler(id, event);
    }

    @Test
    void anUnexpectedFailureOfThePaymentCallShowsAsFailedAndLeavesItsWordsToTheLog() throws Exception {
        String event = app.newEvent("A1");
        app.outside.trouble(Trouble.FAIL_UNEXPECTEDLY);
        List<LogRecord> logged = new CopyOnWriteArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                logged.add(record);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger timelineLog = Logger.getLogger(lastseat.work.Timeline.class.getName());
        timelineLog.addHandler(handler);
        PurchaseOutcome outcome;
        try {
            outcome = buy(event, "ada", "tok_ok", "A1");
        } finally {
            timelineLog.removeHandler(handler);
        }

        assertThat(outcome).as("it may have left: pending, never refused").isInstanceOf(PurchaseOutcome.Pending.class);
        String id = onlyPurchase(event);
        PurchaseView view = app.purchases.find(id).orElseThrow();
        assertThat(view.timeline()).filteredOn(step -> step.step().equals("payment"))
                .extracting(PurchaseView.Step::outcome).containsExactly("failed");
        Leaks.none("the purchase", lastseat.web.Json.text(view));
        assertThat(logged).as("the log keeps what the timeline does not")
                .anySatisfy(record -> assertThat(record.getThrown()).hasMessage(FakeOutside.UNEXPECTED_MESSAGE));

        settledByTheReconciler(id, event);
    }

    @Test
    void aSeatWhosePaymentIsUnknownIsNotSoldToTheNextBuyer() throws Exception {
        String event = app.newEvent("A1");
        app.outside.trouble(Trouble.LOSE_ANSWER);
        buy(event, "ada", "tok_ok", "A1");

        PurchaseOutcome second = buy(event, "bob", "tok_ok", "A1");

        assertThat(second).isEqualTo(new PurchaseOutcome.Refused(new Refusal.SeatsTaken(List.of("A1"))));
        assertThat(app.outside.captures()).hasSize(1);
        app.invariantsHold(event);
    }

    @Test
    void aLapsedHoldIsExpiredByTheSweeperAndItsSeatIsSoldAgain() throws Exception {
        String event = app.newEvent("A1");
        Purchases.Reservation left = app.purchases.reserve(order(event, "ada", "tok_ok", "A1"));
        assertThat(left).isInstanceOf(Purchases.Reservation.Held.class);
        String abandoned = ((Purchases.Reservation.Held) left).hold().purchaseId();

        app.clock.advance(app.config.purchase().holdTtl().plusSeconds(1));
        app.workers.sweepNow();

        assertThat(app.state(abandoned)).isEqualTo("EXPIRED");
        assertThat(buy(event, "bob", "tok_ok", "A1")).isInstanceOf(PurchaseOutcome.Confirmed.class);
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    @Test
    void aQuantityLargerThanWhatIsLeftIsRefusedAsSoldOutAndTakesNothing() throws Exception {
        String event = app.newEvent(3);
        assertThat(buy(event, "ada", "tok_ok", null, 2)).isInstanceOf(PurchaseOutcome.Confirmed.class);

        PurchaseOutcome outcome = buy(event, "bob", "tok_ok", null, 2);

        assertThat(outcome).isEqualTo(new PurchaseOutcome.Refused(new Refusal.SoldOut(2, 1)));
        assertThat(app.db.count("SELECT COUNT(*) FROM seats WHERE event_id = ? AND state = 'AVAILABLE'", event)).isEqualTo(1);
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    /** Once its settle time is over, one reconciler pass confirms the purchase: one capture, seats sold, nothing held. */
    private void settledByTheReconciler(String id, String event) throws InterruptedException {
        app.clock.advance(app.config.reconcile().settleTime());
        app.workers.reconcileNow();

        assertThat(app.state(id)).isEqualTo("CONFIRMED");
        assertThat(app.outside.captures()).hasSize(1);
        app.invariantsHold(event);
        app.resourcesCameBack(event);
    }

    private PurchaseOutcome buy(String event, String buyer, String token, String seat) throws InterruptedException {
        return buy(event, buyer, token, seat, 1);
    }

    private PurchaseOutcome buy(String event, String buyer, String token, String seat, int quantity) throws InterruptedException {
        return app.flow.purchase(order(event, buyer, token, seat, quantity),
                                 Deadline.after(app.config.purchase().deadline(), System.nanoTime()));
    }

    private static Order order(String event, String buyer, String token, String seat) {
        return order(event, buyer, token, seat, 1);
    }

    private static Order order(String event, String buyer, String token, String seat, int quantity) {
        return new Order(event, seat == null ? null : List.of(seat), quantity, buyer, buyer + "@example.com", token,
                         "demo-shop", UUID.randomUUID().toString());
    }

    private String onlyPurchase(String event) {
        return app.db.strings("SELECT id FROM purchases WHERE event_id = ?", event).getFirst();
    }
}
