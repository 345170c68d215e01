package lastseat.purchase;

import lastseat.checks.Quote;
import lastseat.db.Sql;
import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.Hold;
import lastseat.inventory.Order;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code purchase.max-in-flight} over HTTP with a cap of one: while one purchase waits for a slow
 * provider (600 ms), the next is answered 503 with {@code Retry-After} at once, reserves nothing,
 * stores no key, and its retry runs normally once the place is free. A retry given no place whose own
 * earlier request left a purchase holding its seat is told its key is in flight, never that the seat is
 * taken.
 *
 * <p>The deadline is raised to 3 s so that the slow payment, not the deadline, ends the first
 * purchase. The first is known to hold the place once its payment request is in WireMock's
 * journal: the place is claimed before the reservation and given back only after the answer is
 * made, and the provider keeps the request for 600 ms more.
 */
class AdmissionLimitTest {
    private static final int PAYMENT_DELAY_MS = 600;
    private static final Pattern REFUSED_METRIC =
            Pattern.compile("lastseat_purchases_total\\{[^}]*status=\"503\"[^}]*} ([0-9.eE+]+)");
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("purchase.max-in-flight", "1",
                                                         "purchase.deadline", "3s",
                                                         "payment.max-wait", "3s"));

    private String event;

    @BeforeEach
    void slowProviderAndAFreshEvent() {
        app.stubs().stubFor(post(urlPathEqualTo("/payments")).atPriority(1)
                                    .willReturn(aResponse().withStatus(201).withFixedDelay(PAYMENT_DELAY_MS)
                                                           .withTransformers("ledger")));
        event = app.newEvent("A1", "A2");
    }

    @Test
    void aPurchaseArrivingWhileTheOnlyPlaceIsTakenIsRefusedAtOnceAndChangesNothing() throws Exception {
        String refusedKey = UUID.randomUUID().toString();
        double refusedBefore = refusedCount();
        Answer refused;
        Answer first;
        try (ExecutorService buyers = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Answer> holder = buyers.submit(() -> app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1"));
            awaitPaymentRequests(1);

            refused = app.client().purchaseSeats(refusedKey, event, "A2");
            boolean holderStillRunning = !holder.isDone();
            first = holder.get(10, TimeUnit.SECONDS);

            assertThat(holderStillRunning).as("the refusal did not wait for the purchase holding the place").isTrue();
        }

        assertThat(refused.status()).as(refused.toString()).isEqualTo(503);
        assertThat(refused.header("Retry-After")).isEqualTo("1");
        assertThat(refused.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(refused.json().path("type").asText()).isEqualTo("urn:lastseat:problem:too-many-purchases");
        assertThat(refused.elapsedMillis()).as("answered at once, not after the slow payment").isLessThan(PAYMENT_DELAY_MS);
        assertThat(first.status()).as("the purchase holding the place: " + first).isEqualTo(201);
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event))
                .as("no purchase row for the refused one").isEqualTo(1);
        assertThat(app.db().count("SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = ?", refusedKey))
                .as("the refused key was not stored").isZero();
        assertThat(app.client().event(event).path("available").asInt()).as("A2 still free").isEqualTo(1);
        app.stubs().verify(1, postRequestedFor(urlPathEqualTo("/payments")));
        assertThat(refusedCount() - refusedBefore).as("the refusal is counted as a 503").isEqualTo(1.0);
        everythingCameBack();
    }

    @Test
    void aRefusedPurchaseRetriedWithItsKeyOnceThePlaceIsFreeRunsNormally() throws Exception {
        String refusedKey = UUID.randomUUID().toString();
        Answer refused;
        try (ExecutorService buyers = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Answer> holder = buyers.submit(() -> app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1"));
            awaitPaymentRequests(1);
            refused = app.client().purchaseSeats(refusedKey, event, "A2");
            assertThat(holder.get(10, TimeUnit.SECONDS).status()).isEqualTo(201);
        }
        assertThat(refused.status()).as(refused.toString()).isEqualTo(503);

        Answer retry = app.client().purchaseSeats(refusedKey, event, "A2");

        assertThat(retry.status()).as(retry.toString()).isEqualTo(201);
        assertThat(retry.header("Idempotent-Replayed")).as("run afresh, not a replay of the 503").isNull();
        assertThat(retry.json().path("seats").toString()).isEqualTo("[\"A2\"]");
        assertThat(app.client().event(event).path("sold").asInt()).isEqualTo(2);
        everythingCameBack();
    }

    @Test
    void aRetryWithoutAPlaceWhoseStoppedPurchaseHoldsItsSeatIsToldInFlightNeverSeatsTaken() throws Exception {
        // Its process stopped after PAYING was written: the payment may have left, and its seat A2 is still held.
        String key = UUID.randomUUID().toString();
        String body = LastseatClient.seatsBody(event, "A2");
        assertThat(app.services().purchaseRoutes().keys().claim("demo-shop", key, IdempotencyKeys.fingerprint(body.getBytes(StandardCharsets.UTF_8))))
                .isInstanceOf(IdempotencyKeys.Claim.Fresh.class);
        Purchases purchases = app.services().purchases();
        Hold hold = ((Purchases.Reservation.Held) purchases.reserve(
                new Order(event, List.of("A2"), 1, "ada", "ada@example.com", "tok_ok", "demo-shop", key))).hold();
        assertThat(purchases.startPayment(hold, new Quote(new BigDecimal("4.00"), "EUR"))).isInstanceOf(Purchases.Moved.Done.class);
        app.services().db().inTransaction(c -> Sql.update(c, "UPDATE idempotency_keys SET created_at = ? WHERE idem_key = ?",
                                                 OffsetDateTime.now().minusHours(1), key));
        Answer retry;
        try (ExecutorService buyers = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Answer> holder = buyers.submit(() -> app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1"));
            awaitPaymentRequests(1);
            retry = app.client().purchase(key, body);
            assertThat(holder.get(10, TimeUnit.SECONDS).status()).isEqualTo(201);
        }

        assertThat(retry.status()).as(retry.toString()).isEqualTo(409);
        assertThat(retry.type()).as("about the request, not 'seats taken', which says nothing was charged")
                .isEqualTo("idempotency-key-in-flight");
        assertThat(app.db().purchaseState(hold.purchaseId())).isEqualTo("PAYING");
        assertThat(app.db().strings("SELECT state FROM idempotency_keys WHERE idem_key = ?", key)).containsExactly("IN_FLIGHT");
        Admission admission = app.services().purchaseRoutes().admission();
        assertThat(admission.available()).as("admission place back").isEqualTo(admission.capacity());
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    /** The admission place, the payment permits and the pool connections are all back; no seat is held. */
    private void everythingCameBack() {
        Admission admission = app.services().purchaseRoutes().admission();
        // The place is given back before the answer is written, so no wait is needed here.
        assertThat(admission.available()).as("admission place back").isEqualTo(admission.capacity()).isEqualTo(1);
        Invariants.hold(app, event);
        Invariants.nothingHeld(app, event);
        Invariants.resourcesCameBack(app);
    }

    /** Bounded wait until the provider has received {@code n} payment requests. */
    private static void awaitPaymentRequests(int n) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (app.stubs().findAll(postRequestedFor(urlPathEqualTo("/payments"))).size() < n) {
            assertThat(System.nanoTime()).as("%d payment request(s) reached the provider within 5 s", n).isLessThan(until);
            Thread.sleep(2);
        }
    }

    /** {@code lastseat.purchases{status=503}} as the metrics endpoint shows it, summed over its reasons (0 before the first). */
    private static double refusedCount() {
        Matcher m = REFUSED_METRIC.matcher(app.client().metrics());
        double sum = 0;
        while (m.find()) {
            sum += Double.parseDouble(m.group(1));
        }
        return sum;
    }
}
