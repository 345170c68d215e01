package lastseat.drills;

import lastseat.testkit.FreshPostgres;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.ServerProcess;
import lastseat.testkit.StubServer;
import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Several instances behind a load balancer on one PostgreSQL: two real lastseat processes (their own
 * JVMs, their own ports, their own background workers) on one fresh database (127.0.0.1:5432), the
 * same WireMock stubs. 500 buyers of one seat each, for 50 seats, arrive in waves of 50 released
 * together, every other buyer at the other instance. The provider answers payments after 100 to
 * 1200 ms, so many answers come after the 800 ms deadline: those purchases go PAYMENT_UNKNOWN
 * (the provider did capture them) and the reconcilers of both instances compete to settle them,
 * while the outbox workers of both compete to send the confirmation emails. Then 100 clients send
 * their key again, to the instance they did not use first.
 *
 * <p>The scenario runs once ({@link #twoInstancesSellFiftySeatsToFiveHundredBuyers}); each test checks
 * one promise against what the database, the provider's ledger and journal, and the servers' logs
 * show. The two instances call the stubs by different host names (127.0.0.1 and localhost), so the
 * journal tells which instance made each outside call.
 *
 * <p>Skipped, loudly, when PostgreSQL is not reachable — unless {@code LASTSEAT_REQUIRE_POSTGRES=1}
 * (CI), then it fails.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TwoInstancesTest {
    private static final int SEATS = 50;
    private static final int BUYERS = 500;
    private static final int WAVE = 50;
    private static final int RETRIES = 100;
    /** Times a retry answered 503 with Retry-After is sent again after it, as a client does. */
    private static final int BUSY_RETRIES = 3;
    /** The reconciler's lease lasts 2 × reconcile.call-timeout; two lookups this close would be one lease asked twice. */
    private static final Duration LOOKUP_LEASE = Duration.ofMillis(300);
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(30);
    private static final Set<String> OPEN = Set.of("HELD", "PAYING", "PAYMENT_UNKNOWN");
    private static final Pattern RECONCILED = Pattern.compile("purchase ([0-9a-f-]{36}) (was captured as|has no payment)");

    private final FreshPostgres database = new FreshPostgres("lastseat_two_");
    /** The servers' logs ({@code lastseat-<port>.log}), kept until the next run for a look after a failure. */
    private final Path dataDir = Path.of("target", "two-instances", database.name());
    private WireMockServer stubs;
    private final ServerProcess[] servers = new ServerProcess[2];
    private final Target[] instances = new Target[2];
    private final String[] hosts = new String[2];

    // What the scenario left: the answers, the retries, and the state of the world before and after them.
    private String event;
    private final List<Sent> firstAnswers = new ArrayList<>();
    private final List<Retry> retries = new ArrayList<>();
    private final List<String> waves = new ArrayList<>();
    private int paymentCallsBeforeRetries;
    private int purchasesBeforeRetries;
    private boolean settled;
    private JsonNode invariants;
    private Findings findings;

    /** One buyer's first request: which instance it went to, and its answer. */
    private record Sent(String key, String body, int instance, Answer answer) {
        String purchaseId() {
            return answer.body().startsWith("{") ? answer.json().path("id").asText(null) : null;
        }
    }

    /** The same key and body sent again to the other instance. */
    private record Retry(Sent first, int instance, Answer answer) {
    }

    @BeforeAll
    void twoInstancesSellFiftySeatsToFiveHundredBuyers() throws IOException {
        // Arrange: a fresh database, the stubs, two lastseat processes on that database.
        database.create("TwoInstancesTest");
        stubs = StubServer.create();
        stubs.start();
        hosts[0] = "127.0.0.1:" + stubs.port();
        hosts[1] = "localhost:" + stubs.port();
        keepOnlyThisRunsLogs();
        long starting = System.nanoTime();
        startBothServers();
        long startMillis = millisSince(starting);
        for (int i = 0; i < 2; i++) {
            instances[i] = new Target(servers[i].instance(), URI.create("http://" + hosts[0]));
            warmUp(instances[i]);
        }
        Target a = instances[0];
        event = a.newEvent(SEATS);
        // Payments answer after 100-1200 ms: those past the deadline leave their purchase PAYMENT_UNKNOWN,
        // captured at the provider (the ledger records before the delay), for a reconciler to settle.
        a.stub(Faults.uniformPayment(100, 1200));

        // Act: waves of buyers released together, alternating instances; then retries on the other instance.
        long buying = System.nanoTime();
        for (int wave = 0; wave < BUYERS / WAVE; wave++) {
            int first = wave * WAVE;
            List<Sent> answers = Target.together(WAVE, i -> {
                int n = first + i;
                String key = "buyer-" + n + "-" + UUID.randomUUID();
                String body = LastseatClient.quantityBody(event, 1, "buyer-" + n);
                return new Sent(key, body, n % 2, instances[n % 2].purchase(key, body));
            });
            firstAnswers.addAll(answers);
            waves.add("wave " + (wave + 1) + ": " + Target.describe(answers.stream().map(Sent::answer).toList()));
        }
        long buyingMillis = millisSince(buying);
        // Every payment request of the waves has reached the provider before the snapshot is taken.
        paymentCallsBeforeRetries = awaitStable(this::paymentCalls);
        purchasesBeforeRetries = a.invariants(event).path("purchases").size();
        List<Sent> retried = toRetry();
        retries.addAll(Target.together(retried.size(), i -> {
            Sent first = retried.get(i);
            int other = 1 - first.instance();
            return new Retry(first, other, retried(instances[other], first));
        }));
        long settling = System.nanoTime();
        settled = await(SETTLE_BOUND, () -> {
            JsonNode purchases = a.invariants(event).path("purchases");
            return purchases.findValuesAsText("state").stream().noneMatch(OPEN::contains)
                   && a.outbox("pending").path("count").asInt() == 0
                   && emailsByKey().keySet().containsAll(emailKeys(purchases));
        });
        long settleMillis = millisSince(settling);
        findings = new Findings();
        invariants = findings.invariantsHold(a, event);
        System.out.println("two instances on " + database.name() + ": started in " + startMillis + " ms, " + BUYERS + " buyers answered in "
                           + buyingMillis + " ms, settled " + settleMillis + " ms after the retries; first answers " + Target.describe(firstAnswers.stream().map(Sent::answer).toList())
                           + "; retries " + Target.describe(retries.stream().map(Retry::answer).toList())
                           + "; purchases " + invariants.path("purchasesByState") + "; lookups by instance " + lookupsByInstance()
                           + "; emails by instance " + emailsByInstance() + "; reconciled by instance " + reconciledBy().values().stream()
                                   .flatMap(List::stream).collect(Collectors.groupingBy(i -> i, TreeMap::new, Collectors.counting()))
                           + "\n  " + String.join("\n  ", waves));
    }

    @AfterAll
    void stopServersAndDropDatabase() throws SQLException {
        for (ServerProcess server : servers) {
            if (server != null) {
                server.close();
            }
        }
        if (stubs != null) {
            stubs.stop();
        }
        database.close();
    }

    @Test
    void exactlyFiftyOfFiveHundredBuyersSpreadOverBothInstancesGetASeat() {
        Map<Integer, Long> seatsTakenThrough = firstAnswers.stream().filter(s -> s.answer().status() == 201 || s.answer().status() == 202)
                .collect(Collectors.groupingBy(Sent::instance, TreeMap::new, Collectors.counting()));

        assertThat(settled).as("every purchase terminal and the outbox empty within %s; %s", SETTLE_BOUND, invariants).isTrue();
        assertThat(seatsTakenThrough).as("purchases paid (201 or 202) through each instance").containsOnlyKeys(0, 1);
        assertThat(invariants.path("purchasesByState").path("CONFIRMED").asInt())
                .as("%s; available %s; %s", invariants.path("purchasesByState"), invariants.path("available"), String.join("; ", waves))
                .isEqualTo(SEATS);
    }

    @Test
    void soldPlusHeldPlusAvailableIsTheCapacityAndEveryConfirmedPurchaseWasChargedOnce() {
        Map<String, Long> capturesByPurchase = new HashMap<>();
        instances[0].ledger().path("captures").forEach(p -> capturesByPurchase.merge(p.path("purchaseId").asText(), 1L, Long::sum));
        List<String> confirmed = purchasesIn("CONFIRMED");

        assertThat(findings.ok()).as(String.join("\n", findings.lines())).isTrue();
        assertThat(invariants.path("sold").asInt() + invariants.path("held").asInt() + invariants.path("available").asInt())
                .as(invariants.toString()).isEqualTo(SEATS);
        assertThat(invariants.path("sold").asInt()).isEqualTo(SEATS);
        assertThat(confirmed).allSatisfy(id -> assertThat(capturesByPurchase.get(id)).as("captures of " + id).isEqualTo(1L));
    }

    @Test
    void aKeyRetriedOnTheOtherInstanceIsAnsweredFromTheDatabaseWithoutANewPurchaseOrCharge() {
        Map<String, List<String>> purchasesByKey = new HashMap<>();
        invariants.path("purchases").forEach(p -> purchasesByKey.computeIfAbsent(p.path("idempotencyKey").asText(), k -> new ArrayList<>())
                .add(p.path("id").asText()));

        assertThat(retries).hasSize(RETRIES);
        assertThat(retries.stream().map(r -> r.first().answer().status()).collect(Collectors.toSet()))
                .as("the retried keys' first answers").contains(409).containsAnyOf(201, 202);
        assertThat(retries).allSatisfy(retry -> {
            Answer first = retry.first().answer();
            Answer again = retry.answer();
            assertThat(retry.instance()).isNotEqualTo(retry.first().instance());
            // A 409 told before admission (the seats were gone when a place could not be had) stores no
            // key: its retry is answered afresh — the same 409, still without a purchase.
            boolean toldBeforeAdmission = first.status() == 409 && retry.first().purchaseId() == null
                                          && again.header("Idempotent-Replayed") == null;
            assertThat(toldBeforeAdmission || "true".equals(again.header("Idempotent-Replayed"))).as(again.body()).isTrue();
            if (first.status() == 202) {
                // A pending answer is not final: the replay says where the purchase stands now.
                assertThat(again.json().path("id").asText()).isEqualTo(retry.first().purchaseId());
                assertThat(again.status()).as(again.body()).isEqualTo(switch (again.json().path("state").asText()) {
                    case "CONFIRMED" -> 201;
                    case "PAYMENT_UNKNOWN" -> 202;
                    default -> 200;
                });
            } else {
                assertThat(again.status()).isEqualTo(first.status());
                assertThat(again.body()).isEqualTo(first.body());
            }
            String id = retry.first().purchaseId();
            assertThat(purchasesByKey.getOrDefault(retry.first().key(), List.of()))
                    .as("purchases made with key " + retry.first().key())
                    .isEqualTo(id == null ? List.of() : List.of(id));
        });
        assertThat(invariants.path("purchases").size()).as("purchases of the event").isEqualTo(purchasesBeforeRetries);
        assertThat(paymentCalls()).as("payment calls").isEqualTo(paymentCallsBeforeRetries);
    }

    @Test
    void everyConfirmationEmailIsSentOnceThoughTheOutboxWorkersOfBothInstancesRun() {
        Set<String> ours = new HashSet<>(invariants.path("purchases").findValuesAsText("id"));
        Map<String, Integer> times = emailsByKey().entrySet().stream().filter(e -> ours.contains(purchaseOfEmail(e.getKey())))
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
        Map<String, Long> calls = instances[0].journal("POST", "/emails").stream()
                .map(r -> r.path("headers").path("Idempotency-Key").asText()).filter(key -> ours.contains(purchaseOfEmail(key)))
                .collect(Collectors.groupingBy(key -> key, Collectors.counting()));

        assertThat(times.keySet()).containsAll(confirmedEmailKeys());
        assertThat(times).as("deliveries per key, at the receiver").allSatisfy((key, n) -> assertThat(n).as(key).isEqualTo(1));
        assertThat(calls).as("POST /emails per key").allSatisfy((key, n) -> assertThat(n).as(key).isEqualTo(1L));
        assertThat(emailsByInstance()).as("emails sent by each instance's worker").containsOnlyKeys(0, 1);
    }

    @Test
    void everyUnknownPaymentIsSettledByOneInstanceWhoseLookupsNeverOverlap() {
        Set<String> unknown = firstAnswers.stream().filter(s -> s.answer().status() == 202).map(Sent::purchaseId)
                .collect(Collectors.toSet());
        Map<String, List<Long>> lookupTimes = new HashMap<>();
        for (JsonNode lookup : lookups()) {
            lookupTimes.computeIfAbsent(purchaseOfLookup(lookup), id -> new ArrayList<>()).add(lookup.path("loggedDate").asLong());
        }
        Map<String, List<Integer>> reconciledBy = reconciledBy();

        assertThat(unknown).as("purchases answered 202 (payment unknown)").isNotEmpty();
        assertThat(lookupTimes.keySet()).as("purchases looked up").containsAll(unknown);
        assertThat(lookupTimes).as("lookups of one purchase closer than the lease " + LOOKUP_LEASE).allSatisfy((id, at) -> {
            List<Long> sorted = at.stream().sorted().toList();
            for (int i = 1; i < sorted.size(); i++) {
                assertThat(sorted.get(i) - sorted.get(i - 1)).as(id + " looked up at " + sorted).isGreaterThanOrEqualTo(LOOKUP_LEASE.toMillis());
            }
        });
        assertThat(reconciledBy.keySet()).as("purchases settled by a reconciler (servers' logs)").containsAll(unknown);
        assertThat(reconciledBy).as("purchases a reconciler settled more than once, or on both instances")
                .allSatisfy((id, by) -> assertThat(by).as(id).hasSize(1));
        assertThat(lookupsByInstance()).as("lookups made by each instance's reconciler").containsOnlyKeys(0, 1);
        for (ServerProcess server : servers) {
            assertThat(refusedBackgroundMoves(server)).as("background moves refused in " + server.url() + "'s log").isEmpty();
        }
    }

    // --- the scenario's parts ---

    private void keepOnlyThisRunsLogs() throws IOException {
        Path runs = dataDir.getParent();
        if (Files.isDirectory(runs)) {
            try (var old = Files.walk(runs)) {
                for (Path path : old.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    if (!path.equals(runs)) {
                        Files.deleteIfExists(path);
                    }
                }
            }
        }
        Files.createDirectories(dataDir);
    }

    /**
     * Both at once, so that both migrate the fresh database together (Flyway locks it for one of
     * them). Each start is bounded by {@link ServerProcess}; every server that did start is kept for
     * {@link #stopServersAndDropDatabase}, also when the other failed.
     */
    private void startBothServers() {
        List<Future<ServerProcess>> started = new ArrayList<>();
        try (ExecutorService starting = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 2; i++) {
                Map<String, String> settings = settings();
                URI stubsUri = URI.create("http://" + hosts[i]);
                started.add(starting.submit(() -> ServerProcess.start(dataDir, stubsUri, settings)));
            }
        } // close() waits for both starts to end
        List<String> failures = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Future<ServerProcess> start = started.get(i);
            switch (start.state()) {
                case SUCCESS -> servers[i] = start.resultNow();
                case FAILED -> failures.add("lastseat " + i + " did not start: " + start.exceptionNow().getMessage());
                default -> failures.add("lastseat " + i + " did not start: " + start.state());
            }
        }
        if (!failures.isEmpty()) {
            throw new IllegalStateException(String.join("; ", failures));
        }
    }

    /** PostgreSQL, and background workers that run often and settle fast, so that they compete during the test. */
    private Map<String, String> settings() {
        Map<String, String> settings = new HashMap<>();
        settings.put("db.url", database.url());
        settings.put("db.user", "postgres");
        settings.put("purchase.sweep-interval", "200ms");
        settings.put("reconcile.settle-time", "300ms");
        settings.put("reconcile.interval", "200ms");
        settings.put("outbox.interval", "100ms");
        // Connecting to the stubs under a burst on two cores can take longer than the 250 ms default; not what this tests.
        settings.put("outside.connect-timeout", "1s");
        return settings;
    }

    /** A few purchases on an event of its own, so that a cold JVM's first purchases do not meet the deadline. */
    private static void warmUp(Target instance) {
        String warm = instance.newEvent(10);
        Target.together(10, i -> instance.buyOne(warm));
    }

    /**
     * The first request sent again as a client sends it: an answer 503 with {@code Retry-After} (a key never stored,
     * run afresh, shed by a busy instance) is sent again after the wait it names, at most {@value #BUSY_RETRIES} times.
     */
    private static Answer retried(Target instance, Sent first) {
        Answer answer = instance.purchase(first.key(), first.body());
        for (int i = 0; i < BUSY_RETRIES && answer.status() == 503 && answer.header("Retry-After") != null; i++) {
            try {
                Thread.sleep(Duration.ofSeconds(Long.parseLong(answer.header("Retry-After").trim())));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return answer;
            }
            answer = instance.purchase(first.key(), first.body());
        }
        return answer;
    }

    /** Keys answered once and stored: every 201 and 202, then 409s, {@value #RETRIES} in all. */
    private List<Sent> toRetry() {
        List<Sent> picked = new ArrayList<>(firstAnswers.stream().filter(s -> s.answer().status() == 201 || s.answer().status() == 202)
                                                   .limit(RETRIES).toList());
        firstAnswers.stream().filter(s -> s.answer().status() == 409).limit(RETRIES - picked.size()).forEach(picked::add);
        return picked;
    }

    // --- what the outside world saw ---

    /** Payment requests the provider received for this event's purchases. */
    private int paymentCalls() {
        Set<String> ours = new HashSet<>(instances[0].invariants(event).path("purchases").findValuesAsText("id"));
        return (int) instances[0].journal("POST", Faults.PAYMENTS).stream()
                .filter(r -> ours.contains(purchaseOfCharge(r))).count();
    }

    private static String purchaseOfCharge(JsonNode request) {
        try {
            return Target.JSON.readTree(request.path("body").asText()).path("purchaseId").asText("?");
        } catch (IOException e) {
            return "?";
        }
    }

    /** Provider lookups ({@code GET /payments?idempotencyKey=}) of this event's purchases. */
    private List<JsonNode> lookups() {
        Set<String> ours = new HashSet<>(invariants.path("purchases").findValuesAsText("id"));
        return instances[0].journal("GET", Faults.PAYMENTS).stream().filter(r -> ours.contains(purchaseOfLookup(r))).toList();
    }

    private static String purchaseOfLookup(JsonNode request) {
        String url = request.path("url").asText();
        String key = url.substring(url.indexOf("idempotencyKey=") + "idempotencyKey=".length());
        return key.startsWith("lastseat-payment-") ? key.substring("lastseat-payment-".length()) : "?";
    }

    private Map<Integer, Long> lookupsByInstance() {
        return lookups().stream().collect(Collectors.groupingBy(this::instanceOf, TreeMap::new, Collectors.counting()));
    }

    /** Confirmation emails of this event's purchases, by the instance whose outbox worker sent them. */
    private Map<Integer, Long> emailsByInstance() {
        Set<String> ours = Set.copyOf(confirmedEmailKeys());
        return instances[0].journal("POST", "/emails").stream()
                .filter(r -> ours.contains(r.path("headers").path("Idempotency-Key").asText()))
                .collect(Collectors.groupingBy(this::instanceOf, TreeMap::new, Collectors.counting()));
    }

    /** 0 or 1 by the Host the call was made to; -1 for neither. */
    private int instanceOf(JsonNode request) {
        String host = request.path("headers").path("Host").asText();
        return host.equals(hosts[0]) ? 0 : host.equals(hosts[1]) ? 1 : -1;
    }

    /** The purchase of an outbox key {@code <purchase id>:<kind>}. */
    private static String purchaseOfEmail(String key) {
        return key.contains(":") ? key.substring(0, key.indexOf(':')) : key;
    }

    /** Every email the receiver got, by key, with how many requests carried the key (the ledger is shared by every WireMock of the JVM). */
    private Map<String, Integer> emailsByKey() {
        Map<String, Integer> times = new HashMap<>();
        instances[0].ledger().path("emails").forEach(e -> times.put(e.path("key").asText(), e.path("times").asInt()));
        return times;
    }

    /** The confirmation emails the confirmed purchases of the final state queued. */
    private List<String> confirmedEmailKeys() {
        return emailKeys(invariants.path("purchases"));
    }

    private static List<String> emailKeys(JsonNode purchases) {
        return purchasesIn(purchases, "CONFIRMED").stream().map(id -> id + ":confirmation-email").toList();
    }

    private List<String> purchasesIn(String state) {
        return purchasesIn(invariants.path("purchases"), state);
    }

    private static List<String> purchasesIn(JsonNode purchases, String state) {
        List<String> ids = new ArrayList<>();
        purchases.forEach(p -> {
            if (p.path("state").asText().equals(state)) {
                ids.add(p.path("id").asText());
            }
        });
        return ids;
    }

    /**
     * For each purchase named in a "purchase … was captured as" / "… has no payment" line, the
     * instances whose logs have such a line, once per line.
     */
    private Map<String, List<Integer>> reconciledBy() {
        Map<String, List<Integer>> by = new TreeMap<>();
        for (int i = 0; i < 2; i++) {
            for (String line : log(servers[i])) {
                Matcher m = RECONCILED.matcher(line);
                if (m.find()) {
                    by.computeIfAbsent(m.group(1), id -> new ArrayList<>()).add(i);
                }
            }
        }
        return by;
    }

    /**
     * A background job that moves a purchase somebody else has already moved is refused by the
     * guarded update ({@code TransitionRefused}), and its worker logs the failure: the lines that say so.
     */
    private List<String> refusedBackgroundMoves(ServerProcess server) {
        List<String> lines = log(server);
        List<String> refused = new ArrayList<>();
        for (int i = 0; i + 1 < lines.size(); i++) {
            if (lines.get(i).contains("background job") && lines.get(i + 1).contains("TransitionRefused")) {
                refused.add(lines.get(i + 1));
            }
        }
        return refused;
    }

    private List<String> log(ServerProcess server) {
        try {
            return Files.readAllLines(dataDir.resolve("lastseat-" + server.url().getPort() + ".log"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    // --- waiting, always bounded ---

    private static long millisSince(long nanos) {
        return (System.nanoTime() - nanos) / 1_000_000;
    }

    private static boolean await(Duration bound, BooleanSupplier condition) {
        return LifecycleDrills.await(bound, condition);
    }

    /** The value once two reads 300 ms apart agree (at most 5 s). */
    private static int awaitStable(java.util.function.IntSupplier value) {
        int last = value.getAsInt();
        long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (System.nanoTime() < until) {
            try {
                Thread.sleep(300);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
            int now = value.getAsInt();
            if (now == last) {
                return now;
            }
            last = now;
        }
        return last;
    }
}
