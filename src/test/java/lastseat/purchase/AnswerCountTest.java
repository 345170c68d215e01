package lastseat.purchase;

import lastseat.support.HeldConnection;
import lastseat.db.DatabaseBusy;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every answer to {@code POST /purchases} is counted in {@code lastseat_purchases_total} exactly once,
 * under its status and, for a problem, its kind — also when it is refused before the purchase runs (no
 * key, a body that is not JSON, a seat label no seat can have) and when the database is too busy to
 * claim the key; and every 503 carries the one Retry-After, {@code purchase.retry-after} (2 s here, so
 * that a second value would show), also one answered by the routing's error handler.
 *
 * <p>Runs on an app of its own with a pool of 3 connections and a 250 ms wait for one, so that the
 * database can be made busy. A request the access filter refuses before the route (401, 403, or a busy
 * database while the API key is checked) is not the route's answer and is not counted.
 */
class AnswerCountTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("db.pool-size", "3", "db.connection-timeout", "250ms",
                                                           "purchase.retry-after", "2s"));

    private static final Pattern COUNTER = Pattern.compile("lastseat_purchases_total\\{(.*)} (\\S+)");
    private static final Pattern TAG = Pattern.compile("(\\w+)=\"([^\"]*)\"");

    @Test
    void refusalsBeforeThePurchaseRunsAreCountedOnceUnderTheirKind() {
        String event = app.newEvent("A1");
        LastseatClient client = app.client();
        String body = LastseatClient.seatsBody(event, "A1");

        assertCountedOnce("400 idempotency-key-missing", () -> client.post("/purchases", null, body));
        assertCountedOnce("400 idempotency-key-invalid", () -> client.post("/purchases", "a key with spaces", body));
        assertCountedOnce("415 unsupported-media-type", () -> client.post("/purchases",
                Map.of("Content-Type", "text/plain", "Idempotency-Key", UUID.randomUUID().toString()), body.getBytes(StandardCharsets.UTF_8)));
        assertCountedOnce("400 malformed-json", () -> client.post("/purchases", UUID.randomUUID().toString(), "{\"eventId\":"));
        assertCountedOnce("400 invalid-field", () -> client.post("/purchases", UUID.randomUUID().toString(),
                                                                   LastseatClient.seatsBody(event, "no such label!")));
        assertCountedOnce("201 confirmed", () -> client.post("/purchases", UUID.randomUUID().toString(), body));
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).as("only the good one ran").isEqualTo(1);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aBusyDatabaseWhenTheKeyIsClaimedIsCountedAsDatabaseBusyWithTheOneRetryAfter() {
        String event = app.newEvent("A1");
        Map<String, Double> before = counts();
        Answer answer;
        try (BusyTable busy = BusyTable.inserts(app.services().db(), "idempotency_keys")) {
            answer = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
        }

        assertThat(answer.status()).as(answer.toString()).isEqualTo(503);
        assertThat(answer.type()).isEqualTo("database-busy");
        assertThat(answer.header("Retry-After")).as("purchase.retry-after, the Retry-After of every 503").isEqualTo("2");
        assertThat(delta(before, counts())).as("counted once, by its kind").isEqualTo(Map.of("503 database-busy", 1.0));
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases WHERE event_id = ?", event)).as("nothing ran").isZero();
        assertThat(app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1").status()).as("not busy any more").isEqualTo(201);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aBusyDatabaseWhileTheKeyIsCheckedHasTheSameRetryAfter() throws Exception {
        CountDownLatch taken = new CountDownLatch(3);
        CountDownLatch letGo = new CountDownLatch(1);
        Answer answer;
        try (ExecutorService holders = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 3; i++) {
                holders.submit(() -> hold(taken, letGo));
            }
            assertThat(taken.await(10, TimeUnit.SECONDS)).as("every connection taken").isTrue();

            answer = app.client().purchaseSeats(UUID.randomUUID().toString(), "any-event", "A1");
            letGo.countDown();
        }

        assertThat(answer.status()).as(answer.toString()).isEqualTo(503);
        assertThat(answer.type()).isEqualTo("database-busy");
        assertThat(answer.header("Retry-After")).as("the same rule in the routing's error handler").isEqualTo("2");
        Invariants.resourcesCameBack(app);
    }

    /** Holds a pool connection until {@code letGo}; asks again when a background job had the last one. */
    private static boolean hold(CountDownLatch taken, CountDownLatch letGo) {
        while (true) {
            try {
                return HeldConnection.hold(app.services().db(), taken, letGo);
            } catch (DatabaseBusy busy) {
                // Not yet: a job of the app's own held a connection for a moment.
            }
        }
    }

    private static void assertCountedOnce(String statusAndKind, Supplier<Answer> request) {
        Map<String, Double> before = counts();
        Answer answer = request.get();
        String[] expected = statusAndKind.split(" ");
        assertThat(answer.status()).as(answer.toString()).isEqualTo(Integer.parseInt(expected[0]));
        assertThat(delta(before, counts())).as("%s counted once, and nothing else", statusAndKind).isEqualTo(Map.of(statusAndKind, 1.0));
    }

    /** {@code lastseat_purchases_total} by "status reason". */
    private static Map<String, Double> counts() {
        Map<String, Double> counts = new HashMap<>();
        app.client().metrics().lines().forEach(line -> {
            Matcher counter = COUNTER.matcher(line);
            if (counter.matches()) {
                Map<String, String> tags = new HashMap<>();
                Matcher tag = TAG.matcher(counter.group(1));
                while (tag.find()) {
                    tags.put(tag.group(1), tag.group(2));
                }
                counts.merge(tags.get("status") + " " + tags.get("reason"), Double.parseDouble(counter.group(2)), Double::sum);
            }
        });
        return counts;
    }

    private static Map<String, Double> delta(Map<String, Double> before, Map<String, Double> after) {
        Map<String, Double> delta = new HashMap<>();
        after.forEach((name, count) -> {
            double grew = count - before.getOrDefault(name, 0.0);
            if (grew != 0) {
                delta.put(name, grew);
            }
        });
        return delta;
    }
}
