package lastseat.outbox;

import com.github.tomakehurst.wiremock.http.Fault;
import com.github.tomakehurst.wiremock.stubbing.StubMapping;
import com.github.tomakehurst.wiremock.verification.LoggedRequest;
import lastseat.config.DbConfig;
import lastseat.config.OutboxConfig;
import lastseat.config.OutsideConfig;
import lastseat.db.Database;
import lastseat.db.Sql;
import lastseat.outside.OutsideHttp;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.support.TestApp;
import lastseat.support.TestClock;
import lastseat.testkit.Answer;
import lastseat.testkit.Ledger;
import lastseat.testkit.Together;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import com.sun.net.httpserver.HttpServer;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox worker against the email and refund stubs: delivered once with the purchase's key,
 * retried with the same key through failures, resets, slow answers, a crash and a restart, never
 * sent by two workers at once, and dead-lettered visibly when it cannot be delivered.
 *
 * <p>Each pass is run by the test ({@link OutboxWorker#deliverDue()}) on a clock the test moves, so
 * backoffs and leases end when the test says, without sleeping. The app has its own database, and
 * its outbox is emptied before each test; its own worker (once Services starts one) is held at a
 * one-hour interval so that it cannot take the rows these tests deliver.
 */
class OutboxWorkerTest {
    private static final String EMAIL = "confirmation-email";
    private static final Duration BACKOFF = Duration.ofSeconds(10);
    private static final Duration MAX_BACKOFF = Duration.ofMinutes(5);
    // Long enough for a loaded two-core machine to answer a healthy stub; the slow stub takes 5 s.
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration RETENTION = Duration.ofDays(7);
    private static final Map<String, String> SETTINGS = Map.of("outbox.interval", "1h");

    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(SETTINGS);

    private final List<OutboxWorker> workers = new ArrayList<>();
    private TestClock clock;

    @BeforeEach
    void setUp() {
        db().inTransaction(c -> Sql.update(c, "DELETE FROM outbox"));
        clock = new TestClock();
    }

    @AfterEach
    void workersStopAndResourcesCameBack() {
        workers.forEach(OutboxWorker::close);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aConfirmedPurchasesEmailIsDeliveredOnceWithThePurchaseKeyAndTheRowIsSent() throws Exception {
        String purchase = confirmedPurchase();
        String key = Outbox.dedupeKey(purchase, EMAIL);
        OutboxWorker worker = worker(config());

        int sent = worker.deliverDue();
        int again = worker.deliverDue();

        assertThat(key).isEqualTo(purchase + ":confirmation-email");
        assertThat(sent).isEqualTo(1);
        assertThat(again).as("a SENT row is not sent again").isZero();
        assertThat(emails()).extracting(Ledger.Delivery::key, Ledger.Delivery::times).containsExactly(
                org.assertj.core.groups.Tuple.tuple(key, 1));
        assertThat(emails().getFirst().body()).contains(purchase);
        assertThat(emailRequests()).extracting(r -> r.getHeader("Idempotency-Key")).containsExactly(key);
        OutboxQuery.Row row = row(key);
        assertThat(row.state()).isEqualTo("SENT");
        assertThat(row.attempts()).isEqualTo(1);
        assertThat(row.sentAt()).isEqualTo(clock.instant());
        assertThat(row.lastError()).isNull();
    }

    @Test
    void aFailingEmailServiceLeavesTheRowPendingWithAJitteredBackoffAndItIsSentWhenTheServiceRecovers() throws Exception {
        String purchase = confirmedPurchase();
        String key = Outbox.dedupeKey(purchase, EMAIL);
        StubMapping down = app.stubs().stubFor(post(urlPathEqualTo("/emails")).atPriority(1)
                                                       .willReturn(aResponse().withStatus(500).withBody("{\"error\":\"down\"}")));
        OutboxWorker worker = worker(config());
        Instant failedAt = clock.instant();

        int sentWhileDown = worker.deliverDue();
        OutboxQuery.Row waiting = row(key);
        int sentBeforeTheBackoffEnds = worker.deliverDue();
        app.stubs().removeStub(down);
        clock.advance(BACKOFF);
        int sentAfterRecovery = worker.deliverDue();

        assertThat(sentWhileDown).isZero();
        assertThat(waiting.state()).isEqualTo("PENDING");
        assertThat(waiting.attempts()).isEqualTo(1);
        assertThat(waiting.lastError()).contains("HTTP 500").contains("down");
        assertThat(waiting.nextAttemptAt()).as("between half and all of the backoff")
                .isBetween(failedAt.plus(BACKOFF.dividedBy(2)), failedAt.plus(BACKOFF));
        assertThat(sentBeforeTheBackoffEnds).as("nothing is sent before the backoff ends").isZero();
        assertThat(sentAfterRecovery).isEqualTo(1);
        assertThat(row(key).state()).isEqualTo("SENT");
        assertThat(row(key).attempts()).isEqualTo(2);
        assertThat(emails()).extracting(Ledger.Delivery::key).containsExactly(key);
        assertThat(emailRequests()).extracting(r -> r.getHeader("Idempotency-Key")).containsExactly(key, key);
    }

    @Test
    void aResetAfterTheEmailArrivedIsRetriedWithTheSameKeyAndTheReceiverDeliversItOnce() throws Exception {
        String key = Outbox.dedupeKey(confirmedPurchase(), EMAIL);
        // The ledger records the request before WireMock resets the connection: the email arrived,
        // the worker cannot know it.
        StubMapping reset = app.stubs().stubFor(post(urlPathEqualTo("/emails")).atPriority(1)
                                                        .willReturn(aResponse().withFault(Fault.CONNECTION_RESET_BY_PEER)
                                                                            .withTransformers("ledger")));
        OutboxWorker worker = worker(config());

        int sentDuringReset = worker.deliverDue();
        OutboxQuery.Row afterReset = row(key);
        app.stubs().removeStub(reset);
        clock.advance(BACKOFF);
        int sentAfter = worker.deliverDue();

        assertThat(sentDuringReset).isZero();
        assertThat(afterReset.state()).isEqualTo("PENDING");
        assertThat(afterReset.lastError()).isNotBlank();
        assertThat(sentAfter).isEqualTo(1);
        assertThat(row(key).state()).isEqualTo("SENT");
        assertThat(emails()).as("one email at the receiver, asked for twice with one key")
                .extracting(Ledger.Delivery::key, Ledger.Delivery::times)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(key, 2));
        assertThat(emailRequests()).extracting(r -> r.getHeader("Idempotency-Key")).containsExactly(key, key);
    }

    @Test
    void aSlowEmailServiceIsCutAtTheCallTimeoutAndAskedAgainWithTheSameKey() throws Exception {
        String key = Outbox.dedupeKey(confirmedPurchase(), EMAIL);
        StubMapping slow = app.stubs().stubFor(post(urlPathEqualTo("/emails")).atPriority(1)
                                                       .willReturn(aResponse().withStatus(202).withFixedDelay(5000)
                                                                           .withTransformers("ledger")));
        OutboxWorker worker = worker(config());

        long start = System.nanoTime();
        int sentWhileSlow = worker.deliverDue();
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        OutboxQuery.Row afterTimeout = row(key);
        app.stubs().removeStub(slow);
        clock.advance(BACKOFF);
        int sentAfter = worker.deliverDue();

        assertThat(sentWhileSlow).isZero();
        assertThat(took).as("the pass waits the call timeout (%s), not the 5 s answer", CALL_TIMEOUT)
                .isLessThan(Duration.ofSeconds(3));
        assertThat(afterTimeout.state()).isEqualTo("PENDING");
        assertThat(afterTimeout.attempts()).isEqualTo(1);
        assertThat(afterTimeout.lastError()).as("a sentence, not the exception").isEqualTo("no answer within " + CALL_TIMEOUT.toMillis() + " ms");
        assertThat(sentAfter).isEqualTo(1);
        assertThat(row(key).state()).isEqualTo("SENT");
        assertThat(emails()).extracting(Ledger.Delivery::key, Ledger.Delivery::times)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(key, 2));
    }

    @Test
    void aRowThatFailsMaxAttemptsTimesIsDeadAndVisibleAndNeverSentAgain() throws Exception {
        String key = Outbox.dedupeKey(confirmedPurchase(), EMAIL);
        app.stubs().stubFor(post(urlPathEqualTo("/emails")).atPriority(1).willReturn(aResponse().withStatus(503)));
        OutboxWorker worker = worker(config());

        for (int attempt = 1; attempt <= 3; attempt++) {
            assertThat(worker.deliverDue()).isZero();
            clock.advance(MAX_BACKOFF);
        }
        int afterDeath = worker.deliverDue();

        OutboxQuery.Row dead = row(key);
        assertThat(dead.state()).isEqualTo("DEAD");
        assertThat(dead.attempts()).isEqualTo(3);
        assertThat(dead.lastError()).startsWith("gave up after 3 attempts: HTTP 503");
        assertThat(afterDeath).isZero();
        assertThat(emailRequests()).as("three attempts, then none").hasSize(3);
        assertThat(OutboxQuery.count(db(), "dead")).isEqualTo(1);
        assertThat(OutboxQuery.count(db(), "PENDING")).isZero();
        assertThat(OutboxQuery.list(db(), "DEAD", 100)).extracting(OutboxQuery.Row::idempotencyKey).containsExactly(key);
        assertThat(OutboxQuery.gauge(db(), "DEAD")).isEqualTo(1.0);
    }

    @Test
    void aRowStillFailingGiveUpAfterItWasWrittenIsDeadWithAttemptsLeft() throws Exception {
        String key = Outbox.dedupeKey(confirmedPurchase(), EMAIL);
        app.stubs().stubFor(post(urlPathEqualTo("/emails")).atPriority(1).willReturn(aResponse().withStatus(500)));
        OutboxWorker worker = worker(new OutboxConfig(Duration.ofMillis(50), 50, "/emails", "/refunds", CALL_TIMEOUT,
                                                      BACKOFF, MAX_BACKOFF, 20, Duration.ofMinutes(1), 16, RETENTION, 500));

        int first = worker.deliverDue();
        OutboxQuery.Row young = row(key);
        clock.advance(Duration.ofMinutes(2));
        int second = worker.deliverDue();

        assertThat(first).isZero();
        assertThat(young.state()).isEqualTo("PENDING");
        assertThat(second).isZero();
        OutboxQuery.Row old = row(key);
        assertThat(old.state()).isEqualTo("DEAD");
        assertThat(old.attempts()).isEqualTo(2);
        assertThat(old.lastError()).startsWith("gave up PT1M after it was written: HTTP 500");
    }

    @Test
    void tooManyRequestsIsRetriedButAPermanentRefusalIsDeadAtOnce() throws Exception {
        String key = Outbox.dedupeKey(confirmedPurchase(), EMAIL);
        StubMapping busy = app.stubs().stubFor(post(urlPathEqualTo("/emails")).atPriority(1)
                                                       .willReturn(aResponse().withStatus(429)));
        OutboxWorker worker = worker(config());

        worker.deliverDue();
        OutboxQuery.Row afterBusy = row(key);
        app.stubs().removeStub(busy);
        app.stubs().stubFor(post(urlPathEqualTo("/emails")).atPriority(1)
                                    .willReturn(aResponse().withStatus(422).withBody("{\"error\":\"address rejected\"}")));
        clock.advance(BACKOFF);
        worker.deliverDue();

        assertThat(afterBusy.state()).isEqualTo("PENDING");
        assertThat(afterBusy.lastError()).contains("HTTP 429");
        OutboxQuery.Row refused = row(key);
        assertThat(refused.state()).as("422 will be refused the same way however often it is asked").isEqualTo("DEAD");
        assertThat(refused.attempts()).isEqualTo(2);
        assertThat(refused.lastError()).startsWith("refused for good: HTTP 422").contains("address rejected");
    }

    @Test
    void aCrashBetweenSendingAndMarkingSentResendsWithTheSameKeyOnceTheLeaseEnds() throws Exception {
        String key = Outbox.dedupeKey(confirmedPurchase(), EMAIL);
        // The receiver takes the email at once but answers late: the process "crashes" while waiting.
        StubMapping late = app.stubs().stubFor(post(urlPathEqualTo("/emails")).atPriority(1)
                                                       .willReturn(aResponse().withStatus(202).withFixedDelay(5000)
                                                                           .withTransformers("ledger")));
        Duration callTimeout = Duration.ofSeconds(4);
        OutboxConfig config = new OutboxConfig(Duration.ofMillis(50), 50, "/emails", "/refunds", callTimeout,
                                               BACKOFF, MAX_BACKOFF, 3, Duration.ofHours(24), 16, RETENTION, 500);
        OutboxWorker crashing = worker(config);
        AtomicReference<Throwable> ended = new AtomicReference<>();
        Thread pass = Thread.ofVirtual().start(() -> {
            try {
                crashing.deliverDue();
            } catch (Throwable t) {
                ended.set(t);
            }
        });
        await(() -> emails().stream().anyMatch(d -> d.key().equals(key)), "the email reached the receiver");
        Instant claimedAt = clock.instant();

        long start = System.nanoTime();
        pass.interrupt();
        boolean stopped = pass.join(Duration.ofSeconds(3));
        Duration stopping = Duration.ofNanos(System.nanoTime() - start);
        OutboxQuery.Row afterCrash = row(key);
        OutboxWorker restarted = worker(config);
        int sentWhileLeased = restarted.deliverDue();
        app.stubs().removeStub(late);
        clock.advance(callTimeout.plus(OutboxWorker.LEASE_MARGIN));
        int sentAfterLease = restarted.deliverDue();

        assertThat(stopped).isTrue();
        assertThat(stopping).as("the interrupt cancels the call instead of waiting for the answer")
                .isLessThan(Duration.ofSeconds(2));
        assertThat(ended.get()).isInstanceOf(InterruptedException.class);
        assertThat(afterCrash.state()).as("the delivery reached the receiver but SENT was never written").isEqualTo("PENDING");
        assertThat(afterCrash.attempts()).isEqualTo(1);
        assertThat(afterCrash.sentAt()).isNull();
        assertThat(afterCrash.nextAttemptAt()).as("the lease")
                .isEqualTo(claimedAt.plus(callTimeout).plus(OutboxWorker.LEASE_MARGIN));
        assertThat(sentWhileLeased).as("nobody sends a leased row").isZero();
        assertThat(sentAfterLease).isEqualTo(1);
        assertThat(row(key).state()).isEqualTo("SENT");
        assertThat(emails()).as("sent again with the same key, never a new one")
                .extracting(Ledger.Delivery::key, Ledger.Delivery::times)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(key, 2));
        // WireMock may journal the cut request only when its delay ends; the ledger above counted it on arrival.
        assertThat(emailRequests()).isNotEmpty().allSatisfy(r -> assertThat(r.getHeader("Idempotency-Key")).isEqualTo(key));
    }

    @Test
    void twoWorkersOnOneDatabaseNeverSendOneRowTwice() throws Exception {
        List<String> keys = IntStream.range(0, 20).mapToObj(i -> queue(EMAIL, "{\"to\":\"buyer" + i + "@example.com\"}"))
                .toList();
        app.stubs().stubFor(post(urlPathEqualTo("/emails")).atPriority(1)
                                    .willReturn(aResponse().withStatus(202).withFixedDelay(20).withTransformers("ledger")));
        OutboxWorker first = worker(config());
        OutboxWorker second = worker(config());

        // Both passes read the same 20 due rows before either claims: the second claims half of them first,
        // then the first claims all 20, then both send what they hold, at the same time.
        List<OutboxWorker.Due> readByFirst = first.due();
        List<OutboxWorker.Due> readBySecond = second.due();
        List<OutboxWorker.Due> claimedBySecond = second.claim(readBySecond.subList(0, 10));
        List<OutboxWorker.Due> claimedByFirst = first.claim(readByFirst);
        List<Integer> sent = Together.run(2, i -> {
            try {
                return i == 0 ? first.send(claimedByFirst) : second.send(claimedBySecond);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        });

        assertThat(readByFirst).hasSize(20);
        assertThat(readBySecond).hasSize(20);
        assertThat(claimedBySecond).hasSize(10);
        assertThat(claimedByFirst).as("the rows the second had claimed are lost to the first").hasSize(10)
                .doesNotContainAnyElementsOf(claimedBySecond);
        assertThat(first.claimsLost()).isEqualTo(10);
        assertThat(sent).containsExactly(10, 10);
        assertThat(emails()).extracting(Ledger.Delivery::key).containsExactlyInAnyOrderElementsOf(keys);
        assertThat(emails()).as("every row sent once").allSatisfy(d -> assertThat(d.times()).isEqualTo(1));
        assertThat(emailRequests()).hasSize(20);
        assertThat(OutboxQuery.count(db(), "SENT")).isEqualTo(20);
    }

    @Test
    void aRefundRowGoesToTheRefundServiceWithItsKey() throws Exception {
        String purchase = UUID.randomUUID().toString();
        String key = queue(purchase, "refund", "{\"purchaseId\":\"" + purchase + "\",\"paymentId\":\"pay_7\","
                                               + "\"amount\":\"44.00\",\"currency\":\"EUR\"}");
        OutboxWorker worker = worker(config());

        int sent = worker.deliverDue();

        assertThat(key).isEqualTo(purchase + ":refund");
        assertThat(sent).isEqualTo(1);
        assertThat(Ledger.refunds()).singleElement().satisfies(refund -> {
            assertThat(refund.key()).isEqualTo(key);
            assertThat(refund.purchaseId()).isEqualTo(purchase);
            assertThat(refund.amount()).isEqualTo("44.00");
            assertThat(refund.status()).isEqualTo("refunded");
            assertThat(refund.paymentId()).isEqualTo("pay_7");
        });
        assertThat(app.stubs().findAll(postRequestedFor(urlPathEqualTo("/refunds"))))
                .extracting(r -> r.getHeader("Idempotency-Key")).containsExactly(key);
        assertThat(emails()).isEmpty();
        assertThat(row(key).state()).isEqualTo("SENT");
    }

    @Test
    void aRowOfAnUnknownKindIsDeadAtOnceWithoutACall() throws Exception {
        String key = queue("sms", "{\"to\":\"+100\"}");
        OutboxWorker worker = worker(config());

        int sent = worker.deliverDue();

        assertThat(sent).isZero();
        OutboxQuery.Row row = row(key);
        assertThat(row.state()).isEqualTo("DEAD");
        assertThat(row.attempts()).isZero();
        assertThat(row.lastError()).contains("'sms'");
        assertThat(emailRequests()).isEmpty();
        assertThat(app.stubs().findAll(postRequestedFor(urlPathEqualTo("/refunds")))).isEmpty();
    }

    @Test
    void theStartedWorkerDeliversInTheBackgroundAndStopsWhenClosed() throws Exception {
        String key = Outbox.dedupeKey(confirmedPurchase(), EMAIL);
        OutboxWorker worker = new OutboxWorker(db(), http(app.testApp()), config(), Clock.systemUTC());
        workers.add(worker);

        worker.start();
        await(() -> "SENT".equals(row(key).state()), "the row SENT by the background worker");
        worker.close();
        String later = queue(EMAIL, "{\"to\":\"late@example.com\"}");
        Thread.sleep(300); // six intervals: a worker still running would have sent it

        assertThat(emails()).extracting(Ledger.Delivery::key, Ledger.Delivery::times)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(key, 1));
        assertThat(row(later).state()).as("nothing is sent after close").isEqualTo("PENDING");
    }

    @Test
    void anEmailQueuedBeforeARestartIsDeliveredAfterIt(@TempDir Path dir) throws Exception {
        String url = "jdbc:h2:file:" + dir.resolve("lastseat");
        String key;
        // The first process is this test's subject, stopped halfway: the test owns it, not the extension.
        try (TestApp before = TestApp.start(Map.of("db.url", url, "outbox.interval", "1h"))) {
            String event = before.newEvent("A1");
            Answer answer = before.client.purchaseSeats(UUID.randomUUID().toString(), event, "A1");
            assertThat(answer.status()).as(answer.toString()).isEqualTo(201);
            key = Outbox.dedupeKey(answer.json().path("id").asText(), EMAIL);
            assertThat(OutboxQuery.find(before.services().db(), key)).get().extracting(OutboxQuery.Row::state)
                    .isEqualTo("PENDING");
        }
        app.resetStubs(); // starting the first process emptied the shared ledger; start from a clean one
        clock.catchUp();

        // The restarted process: the same database file opened afresh, and a new worker.
        try (Database reopened = Database.open(new DbConfig(url, "sa", "", 4, Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(1), 16))) {
            OutboxWorker worker = new OutboxWorker(reopened, http(app.testApp()), config(), clock);
            workers.add(worker);

            int sent = worker.deliverDue();

            // At least the purchase's email (the first process's warm-up email may be in the same pass).
            assertThat(sent).isPositive();
            assertThat(OutboxQuery.find(reopened, key)).get().extracting(OutboxQuery.Row::state).isEqualTo("SENT");
            assertThat(Ledger.emails()).filteredOn(d -> d.key().equals(key)).singleElement()
                    .extracting(Ledger.Delivery::times).isEqualTo(1);
            assertThat(reopened.activeConnections()).isZero();
        }
    }

    @Test
    void aPassSendsAsManyRowsAtOnceAsItsConcurrencyAllowsAndNoMore() throws Exception {
        int atOnce = 4;
        List<String> keys = IntStream.range(0, 2 * atOnce).mapToObj(i -> queue(EMAIL, "{\"n\":" + i + "}")).toList();
        // A receiver that answers only once atOnce requests are open together: sent one at a time, the
        // first request would wait for the others in vain and time out.
        CyclicBarrier together = new CyclicBarrier(atOnce);
        AtomicInteger open = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        List<String> received = new CopyOnWriteArrayList<>();
        HttpServer receiver = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        receiver.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        receiver.createContext("/emails", exchange -> {
            most.accumulateAndGet(open.incrementAndGet(), Math::max);
            int status = 202;
            try {
                together.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                status = 503;
            } catch (BrokenBarrierException | TimeoutException e) {
                status = 503;
            }
            received.add(exchange.getRequestHeaders().getFirst("Idempotency-Key"));
            open.decrementAndGet();
            exchange.sendResponseHeaders(status, -1);
            exchange.close();
        });
        receiver.start();
        try {
            OutboxWorker worker = new OutboxWorker(db(), http("http://127.0.0.1:" + receiver.getAddress().getPort()),
                    new OutboxConfig(Duration.ofMillis(50), 50, "/emails", "/refunds", Duration.ofSeconds(5), BACKOFF, MAX_BACKOFF,
                                     3, Duration.ofHours(24), atOnce, RETENTION, 500), clock);
            workers.add(worker);

            int sent = worker.deliverDue();

            assertThat(sent).isEqualTo(2 * atOnce);
            assertThat(most.get()).as("requests open at the receiver at once").isEqualTo(atOnce);
            assertThat(received).as("each row once, with its key").containsExactlyInAnyOrderElementsOf(keys);
            assertThat(keys).allSatisfy(key -> assertThat(row(key).state()).isEqualTo("SENT"));
        } finally {
            receiver.stop(0);
        }
    }

    @Test
    void aRowWaitingInItsPassForTheCallsBeforeItIsLeasedForThemAndNoOtherPassTakesIt() throws Exception {
        // One call at a time, two rows: the second waits for the first call, so its lease must cover two calls.
        Duration callTimeout = Duration.ofSeconds(2);
        OutboxConfig config = new OutboxConfig(Duration.ofMillis(50), 50, "/emails", "/refunds", callTimeout, BACKOFF,
                                               MAX_BACKOFF, 3, Duration.ofHours(24), 1, RETENTION, 500);
        List<String> keys = List.of(queue(EMAIL, "{\"n\":1}"), queue(EMAIL, "{\"n\":2}"));
        app.stubs().stubFor(post(urlPathEqualTo("/emails")).atPriority(1)
                                    .willReturn(aResponse().withStatus(202).withFixedDelay(1000).withTransformers("ledger")));
        OutboxWorker first = worker(config);
        OutboxWorker second = worker(config);
        AtomicReference<Integer> firstSent = new AtomicReference<>();
        Thread pass = Thread.ofVirtual().start(() -> {
            try {
                firstSent.set(first.deliverDue());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        await(() -> !emails().isEmpty(), "the first call reached the receiver");

        // Past one call's lease (call-timeout + margin), within two calls' lease.
        clock.advance(callTimeout.plus(OutboxWorker.LEASE_MARGIN).plusMillis(500));
        int sentBySecond = second.deliverDue();
        assertThat(pass.join(Duration.ofSeconds(10))).isTrue();

        assertThat(sentBySecond).as("both rows are the first pass's until its calls may have ended").isZero();
        assertThat(firstSent.get()).isEqualTo(2);
        assertThat(emails()).extracting(Ledger.Delivery::key).containsExactlyInAnyOrderElementsOf(keys);
        assertThat(emails()).as("each sent once").allSatisfy(d -> assertThat(d.times()).isEqualTo(1));
    }

    @Test
    void sentRowsAreDeletedOnceTheirRetentionHasPassedAtMostPruneBatchAPassAndPendingOrDeadRowsNever() throws Exception {
        Duration retention = Duration.ofHours(1);
        OutboxWorker worker = worker(new OutboxConfig(Duration.ofMillis(50), 50, "/emails", "/refunds", CALL_TIMEOUT, BACKOFF,
                                                      MAX_BACKOFF, 3, Duration.ofHours(24), 16, retention, 5));
        // One pass sends them all, so they tie on next_attempt_at (the end of that pass's lease): with ties,
        // a DELETE ... IN (SELECT ... FETCH FIRST n) on H2 deleted fewer than n in most such runs.
        List<String> sent = IntStream.range(0, 12).mapToObj(i -> queue(EMAIL, "{}")).toList();
        String dead = queue("postcard", "{}");
        assertThat(worker.deliverDue()).isEqualTo(12);
        app.stubs().stubFor(post(urlPathEqualTo("/emails")).atPriority(1).willReturn(aResponse().withStatus(503)));
        String pending = queue(EMAIL, "{}");

        clock.advance(retention.minusSeconds(1));
        OutboxWorker.Pass young = worker.pass();
        clock.advance(Duration.ofHours(2));
        OutboxWorker.Pass first = worker.pass();
        OutboxWorker.Pass second = worker.pass();
        OutboxWorker.Pass third = worker.pass();
        OutboxWorker.Pass fourth = worker.pass();

        assertThat(young.pruned()).as("sent less than the retention ago").isZero();
        assertThat(List.of(first.pruned(), second.pruned(), third.pruned(), fourth.pruned())).as("prune-batch 5")
                .containsExactly(5, 5, 2, 0);
        assertThat(sent).allSatisfy(key -> assertThat(OutboxQuery.find(db(), key)).isEmpty());
        assertThat(row(dead).state()).isEqualTo("DEAD");
        assertThat(row(pending).state()).isEqualTo("PENDING");
        assertThat(OutboxQuery.count(db(), "SENT")).isZero();
    }

    @Test
    void theRetryDelayDoublesUpToTheCapAndIsDrawnBetweenHalfAndAllOfIt() {
        Random random = new Random(7);
        Duration backoff = Duration.ofSeconds(1);
        Duration cap = Duration.ofMinutes(5);

        for (int i = 0; i < 1000; i++) {
            assertThat(OutboxWorker.retryDelay(1, backoff, cap, random)).isBetween(Duration.ofMillis(500), backoff);
            assertThat(OutboxWorker.retryDelay(4, backoff, cap, random)).isBetween(Duration.ofSeconds(4), Duration.ofSeconds(8));
            assertThat(OutboxWorker.retryDelay(20, backoff, cap, random)).isBetween(cap.dividedBy(2), cap);
            assertThat(OutboxWorker.retryDelay(Integer.MAX_VALUE, backoff, cap, random)).isBetween(cap.dividedBy(2), cap);
        }
        Invariants.resourcesCameBack(app);
    }

    private OutboxConfig config() {
        return new OutboxConfig(Duration.ofMillis(50), 50, "/emails", "/refunds", CALL_TIMEOUT, BACKOFF, MAX_BACKOFF, 3,
                                Duration.ofHours(24), 16, RETENTION, 500);
    }

    private OutboxWorker worker(OutboxConfig config) {
        OutboxWorker worker = new OutboxWorker(db(), http(app.testApp()), config, clock);
        workers.add(worker);
        return worker;
    }

    /** An HTTP client to this app's stubs, as Services builds one (the outbox call timeout caps it further). */
    private static OutsideHttp http(TestApp target) {
        return http("http://127.0.0.1:" + target.stubs.port());
    }

    /** An HTTP client as Services builds one, to {@code baseUrl}. */
    static OutsideHttp http(String baseUrl) {
        return new OutsideHttp(new OutsideConfig(baseUrl, Duration.ofSeconds(1),
                                                 Duration.ofSeconds(5), Duration.ofMillis(100), 65536,
                                                 Duration.ofMinutes(10), 32));
    }

    private static Database db() {
        return app.services().db();
    }

    /** A purchase that confirms, which queues its confirmation email; the clock then reaches the row. */
    private String confirmedPurchase() {
        String event = app.newEvent("A1");
        Answer answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
        assertThat(answer.status()).as(answer.toString()).isEqualTo(201);
        clock.catchUp();
        return answer.json().path("id").asText();
    }

    private String queue(String kind, String payload) {
        return queue(UUID.randomUUID().toString(), kind, payload);
    }

    private String queue(String purchase, String kind, String payload) {
        db().inTransaction(c -> {
            Outbox.add(c, kind, purchase, payload, clock.instant());
            return null;
        });
        return Outbox.dedupeKey(purchase, kind);
    }

    /**
     * The emails the receiver got for this app's outbox rows. The ledger is one per test JVM, and
     * other apps' workers (the shared app's) may deliver their own late retries into it meanwhile.
     */
    private List<Ledger.Delivery> emails() {
        return Ledger.emails().stream().filter(d -> OutboxQuery.find(db(), d.key()).isPresent()).toList();
    }

    private OutboxQuery.Row row(String key) {
        return OutboxQuery.find(db(), key).orElseThrow(() -> new AssertionError("no outbox row " + key));
    }

    private static List<LoggedRequest> emailRequests() {
        return app.stubs().findAll(postRequestedFor(urlPathEqualTo("/emails")));
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > until) {
                throw new AssertionError("expected " + what + " within 5 s");
            }
            Thread.sleep(10);
        }
    }
}
