package lastseat.drills;

import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.ServerProcess;
import lastseat.testkit.TempDirs;
import com.fasterxml.jackson.databind.JsonNode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

/**
 * What happens after the first answer: a hold that expires under a slow payment, a payment whose
 * outcome is unknown, and a server killed with purchases in every state. The hold-expiry and
 * crash-restart drills start lastseat processes of their own (settings of their own, a process to
 * kill) against the same stubs; the others use the target.
 */
final class LifecycleDrills {
    private static final Set<String> OPEN = Set.of("HELD", "PAYING", "PAYMENT_UNKNOWN");

    private LifecycleDrills() {
    }

    static List<Drill> all() {
        return List.of(
                new Drill("hold-expiry", "a lastseat of its own with 1 s holds; checks, then a payment, slower than the hold",
                          "slow checks: 409 hold-expired, no payment, the seat sold to the next buyer; a slow payment: confirmed "
                          + "past the hold (its seats were never expired), nothing refunded",
                          LifecycleDrills::holdExpiry).onItsOwnServer(),
                new Drill("payment-unknown", "payment answers 700 ms after the deadline",
                          "202 PAYMENT_UNKNOWN, then the reconciler asks the provider by the key and confirms it; one charge",
                          LifecycleDrills::paymentUnknown),
                new Drill("email-outage", "the email service answers 503 for 3 s while 5 purchases confirm",
                          "the emails wait in the outbox and are retried; every one delivered once after the service returns",
                          LifecycleDrills::emailOutage),
                new Drill("crash-restart", "kill -9 of a lastseat of its own with 100 purchases in flight, then a restart on its file",
                          "every purchase terminal within the stated bound; I1-I4; one charge per confirmed purchase; every key answered",
                          LifecycleDrills::crashRestart).onItsOwnServer());
    }

    /**
     * A lastseat of its own with 1 s holds (and a 5 s deadline, so the holds, not the deadline, decide),
     * warmed up first so that a cold JIT does not move the timings. Checks slower than the hold: the
     * payment never starts and the seat goes to the next buyer. A payment slower than the hold: one
     * rule for the flow and the reconciler — the seats of a purchase whose payment is open are never
     * expired, so the late capture is confirmed, not refunded.
     */
    private static void holdExpiry(Target target, Settings settings, Findings findings) {
        Path dir = tempDir("hold-expiry");
        try (ServerProcess server = ServerProcess.start(dir, target.stubs(), Map.of("purchase.hold-ttl", "1s",
                                                                                    "purchase.deadline", "5s"))) {
            Target own = target.on(server.instance());
            String warmUp = own.newEvent(10);
            Target.together(10, i -> own.buyOne(warmUp));

            String event = own.newEvent("A1", "A2");
            String slowChecks = own.stub(Faults.slowCheck(Faults.FRAUD, 2000));
            Answer late = own.purchase(UUID.randomUUID().toString(), LastseatClient.buyerBody(event, "ada", "tok_ok", "A1"));
            own.unstub(slowChecks);
            Answer next = own.purchase(UUID.randomUUID().toString(), LastseatClient.buyerBody(event, "bob", "tok_ok", "A1"));

            String slowPayment = own.stub(Faults.slowPayment(2000));
            Answer paidLate = own.purchase(UUID.randomUUID().toString(), LastseatClient.buyerBody(event, "cy", "tok_ok", "A2"));
            own.unstub(slowPayment);

            String lateId = "(none)";
            for (JsonNode purchase : own.invariants(event).path("purchases")) {
                if (purchase.path("state").asText().equals("EXPIRED")) {
                    lateId = purchase.path("id").asText();
                }
            }
            String expiredId = lateId;
            findings.check(late.status() == 409 && late.type().equals("hold-expired"),
                           "checks slower than the hold: the buyer is told the hold expired, nothing charged (" + late.status()
                           + " " + late.type() + ")");
            long lateCharges = own.journal("POST", Faults.PAYMENTS).stream()
                    .filter(r -> r.path("body").asText().contains(expiredId)).count();
            findings.check(!expiredId.equals("(none)") && lateCharges == 0, "no payment request was sent for the expired hold "
                                                                              + expiredId);
            findings.check(next.status() == 201, "the seat went back and the next buyer bought it (" + next.status() + ")");
            boolean pastItsHold = paidLate.status() == 201
                                  && java.time.Instant.parse(paidLate.json().path("holdExpiresAt").asText()).isBefore(java.time.Instant.now());
            findings.check(pastItsHold, "a payment slower than the hold is confirmed past the hold's expiry (" + paidLate.status() + ")");
            JsonNode db = findings.invariantsHold(own, event);
            findings.check(db.path("sold").asInt() == 2 && db.path("purchasesByState").path("EXPIRED").asInt() == 1
                           && own.ledger().path("refunds").isEmpty(),
                           "both seats sold once; the slow-checks purchase EXPIRED; nothing refunded");
            findings.figure("captures", own.ledger().path("captures").size());
            findings.figure("refunds", own.ledger().path("refunds").size());
        }
        removeIfHeld(dir, findings);
    }

    private static void paymentUnknown(Target target, Settings settings, Findings findings) {
        String event = target.newEvent(1);
        target.stub(Faults.slowPayment((int) settings.deadline().toMillis() + 700));
        String key = UUID.randomUUID().toString();
        String body = LastseatClient.quantityBody(event, 1, "drill");

        Answer answer = target.purchase(key, body);
        String id = answer.status() == 202 ? answer.json().path("id").asText() : "?";
        long started = System.nanoTime();
        boolean settled = await(Duration.ofSeconds(30), () -> !OPEN.contains(target.purchaseView(id).path("state").asText()));
        long settledMillis = (System.nanoTime() - started) / 1_000_000;
        Answer retry = target.purchase(key, body);

        findings.check(answer.status() == 202, "answered 202 PAYMENT_UNKNOWN at the deadline (" + answer.status() + ")");
        findings.check(settled && "CONFIRMED".equals(target.purchaseView(id).path("state").asText()),
                       "the reconciler asked the provider by the key and confirmed it, " + settledMillis + " ms later");
        findings.check(retry.status() == 201 && "true".equals(retry.header("Idempotent-Replayed")),
                       "the client's retry with its key is told it is confirmed now (" + retry.status() + ")");
        int charges = target.paymentCalls(event).size();
        int lookups = target.journal("GET", Faults.PAYMENTS).size();
        findings.check(charges == 1 && target.capturesFor(event).size() == 1,
                       "one payment call and one capture; the provider was asked " + lookups + " time(s)");
        findings.invariantsHold(target, event);
        findings.figure("settledMillis", settledMillis);
        findings.figure("lookups", lookups);
    }

    private static void emailOutage(Target target, Settings settings, Findings findings) {
        int buyers = 5;
        String event = target.newEvent(buyers);
        String outage = target.stub(Faults.status("/emails", 503));

        List<String> ids = new ArrayList<>();
        for (int i = 0; i < buyers; i++) {
            Answer answer = target.buyOne(event);
            if (answer.status() == 201) {
                ids.add(answer.json().path("id").asText());
            }
        }
        sleep(Duration.ofSeconds(3));
        int refusedCalls = target.journal("POST", "/emails").size();
        JsonNode pending = target.outbox("pending");
        target.unstub(outage);
        long back = System.nanoTime();
        Set<String> keys = ids.stream().map(id -> id + ":confirmation-email").collect(Collectors.toSet());
        boolean delivered = await(Duration.ofSeconds(30), () -> delivered(target).keySet().containsAll(keys));
        long deliveredMillis = (System.nanoTime() - back) / 1_000_000;

        findings.check(ids.size() == buyers, buyers + " purchases confirmed during the outage (" + ids.size() + ")");
        findings.check(refusedCalls >= buyers, "the worker kept trying: " + refusedCalls + " refused deliveries during the outage");
        findings.check(pending.path("items").findValuesAsText("purchaseId").containsAll(ids),
                       "the emails waited in the outbox (GET /outbox?state=pending listed them)");
        Map<String, Integer> times = delivered(target);
        findings.check(delivered && keys.stream().allMatch(k -> times.get(k) == 1),
                       "every email delivered once, " + deliveredMillis + " ms after the service returned, each with its own key");
        findings.check(target.outbox("dead").path("items").findValuesAsText("purchaseId").stream().noneMatch(ids::contains),
                       "none given up (GET /outbox?state=dead)");
        findings.invariantsHold(target, event);
        findings.figure("refusedDeliveries", refusedCalls);
        findings.figure("deliveredMillisAfterOutage", deliveredMillis);
    }

    /** Emails the receiver got, by key, with how many requests carried each key. */
    private static Map<String, Integer> delivered(Target target) {
        Map<String, Integer> times = new HashMap<>();
        target.ledger().path("emails").forEach(e -> times.put(e.path("key").asText(), e.path("times").asInt()));
        return times;
    }

    /**
     * 100 purchases arrive over 1.5 s (so the last are in their checks, the middle ones paying and
     * the first done or unknown) at a lastseat that is killed with SIGKILL, then started again on
     * the same database. Recovery moves what was left: HELD → RELEASED, PAYING → PAYMENT_UNKNOWN →
     * asked by key. Clients retry with their keys until they get an answer that is not "in flight".
     */
    private static void crashRestart(Target target, Settings settings, Findings findings) {
        int buyers = 100;
        Duration bound = Duration.ofSeconds(20);
        Path dir = tempDir("crash-restart");
        Map<String, String> fast = Map.of("purchase.abandoned-after", "1s", "purchase.sweep-interval", "200ms",
                                          "reconcile.settle-time", "500ms", "reconcile.interval", "200ms",
                                          "outbox.interval", "200ms");
        target.stub(Faults.lognormalCheck(Faults.FRAUD, 150, 0.5));
        target.stub(Faults.uniformPayment(100, 1200));
        String event;
        List<String> keys = new ArrayList<>();
        Map<String, String> bodies = new HashMap<>();
        AtomicReference<Map<String, Integer>> atKill = new AtomicReference<>();
        try (ServerProcess first = ServerProcess.start(dir, target.stubs(), fast)) {
            Target own = target.on(first.instance());
            event = own.newEvent(buyers);
            for (int i = 0; i < buyers; i++) {
                keys.add(UUID.randomUUID().toString());
                bodies.put(keys.get(i), LastseatClient.quantityBody(event, 1, "buyer-" + i));
            }
            // A cold JVM is slow for its first purchases; warm it so the kill finds every state.
            String warmUp = own.newEvent(40);
            Target.together(40, i -> own.buyOne(warmUp));
            own.warmConnections(20);
            Thread killer = Thread.ofVirtual().start(() -> {
                sleep(Duration.ofMillis(1500));
                first.kill();
            });
            // 5 every 75 ms: arrivals spread over the 1.5 s before the kill.
            Target.together(buyers, i -> {
                sleep(Duration.ofMillis(75L * (i / 5)));
                try {
                    return own.purchase(keys.get(i), bodies.get(keys.get(i)));
                } catch (RuntimeException killed) {
                    return null;
                }
            });
            join(killer);
            atKill.set(states(dir, event));
        }
        findings.note("states in the database after the kill: " + atKill.get());
        findings.check(atKill.get().keySet().stream().filter(OPEN::contains).count() >= 2,
                       "the kill left purchases in several open states: " + atKill.get());
        try (ServerProcess second = ServerProcess.start(dir, target.stubs(), fast)) {
            Target own = target.on(second.instance());
            long restarted = System.nanoTime();
            Map<String, Answer> answers = new HashMap<>();
            boolean answered = await(bound, () -> {
                List<String> waiting = keys.stream().filter(key -> !isFinal(answers.get(key))).toList();
                if (!waiting.isEmpty()) {
                    List<Answer> round = Target.together(waiting.size(), i -> own.purchase(waiting.get(i), bodies.get(waiting.get(i))));
                    for (int i = 0; i < waiting.size(); i++) {
                        answers.put(waiting.get(i), round.get(i));
                    }
                }
                return keys.stream().allMatch(key -> isFinal(answers.get(key)));
            });
            boolean terminal = await(bound, () -> own.invariants(event).path("purchases").findValuesAsText("state")
                    .stream().noneMatch(OPEN::contains));
            long terminalMillis = (System.nanoTime() - restarted) / 1_000_000;
            if (!terminal) {
                findings.note("the restarted server's threads: " + second.threadDump());
            }
            findings.note("final answers to the retries: " + Target.describe(new ArrayList<>(answers.values())));
            findings.check(answered, "every client got a final answer to its key");
            findings.check(terminal && terminalMillis <= bound.toMillis(),
                           "every purchase terminal " + terminalMillis + " ms after the restart (bound " + bound.toSeconds() + " s)");
            JsonNode db = findings.invariantsHold(own, event);
            Map<String, Long> confirmedPerKey = confirmedPerKey(own, event);
            findings.check(confirmedPerKey.values().stream().allMatch(n -> n <= 1),
                           "no client key has two confirmed purchases");
            findings.figure("atKill", atKill.get());
            findings.figure("afterRecovery", db.path("purchasesByState"));
            findings.figure("terminalMillis", terminalMillis);
        }
        removeIfHeld(dir, findings);
    }

    /** An answer a client stops retrying on: not "still running" (409 in flight) nor "payment pending" (202). */
    private static boolean isFinal(Answer answer) {
        return answer != null && answer.status() != 202 && !answer.type().equals("idempotency-key-in-flight");
    }

    /** How many CONFIRMED purchases each Idempotency-Key has. */
    private static Map<String, Long> confirmedPerKey(Target own, String event) {
        List<String> keys = new ArrayList<>();
        for (JsonNode purchase : own.invariants(event).path("purchases")) {
            if (purchase.path("state").asText().equals("CONFIRMED")) {
                keys.add(purchase.path("idempotencyKey").asText());
            }
        }
        return keys.stream().collect(Collectors.groupingBy(k -> k, Collectors.counting()));
    }

    /** The event's purchases by state, read straight from the H2 file of a dead server. */
    private static Map<String, Integer> states(Path dir, String event) {
        try (Connection c = DriverManager.getConnection("jdbc:h2:file:" + dir.resolve("lastseat").toAbsolutePath(), "sa", "");
             java.sql.PreparedStatement st = c.prepareStatement("SELECT state, COUNT(*) FROM purchases WHERE event_id = ? GROUP BY state")) {
            st.setString(1, event);
            Map<String, Integer> states = new TreeMap<>();
            try (ResultSet rs = st.executeQuery()) {
                while (rs.next()) {
                    states.put(rs.getString(1), rs.getInt(2));
                }
            }
            return states;
        } catch (SQLException e) {
            throw new IllegalStateException("could not read the killed server's database: " + e.getMessage(), e);
        }
    }

    static boolean await(Duration bound, BooleanSupplier condition) {
        long until = System.nanoTime() + bound.toNanos();
        while (System.nanoTime() < until) {
            if (condition.getAsBoolean()) {
                return true;
            }
            sleep(Duration.ofMillis(200));
        }
        return condition.getAsBoolean();
    }

    private static void sleep(Duration pause) {
        try {
            Thread.sleep(pause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static void join(Thread thread) {
        try {
            thread.join(Duration.ofSeconds(20));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** The drill's server directory goes once the drill held; a failure keeps it, with the servers' logs, and says where. */
    private static void removeIfHeld(Path dir, Findings findings) {
        if (findings.ok()) {
            TempDirs.deleteQuietly(dir);
        } else {
            findings.note("the servers' directory, with their logs, is kept: " + dir);
        }
    }

    private static Path tempDir(String name) {
        try {
            return Files.createTempDirectory("lastseat-" + name);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
