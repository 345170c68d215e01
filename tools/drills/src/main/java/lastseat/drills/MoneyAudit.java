package lastseat.drills;

import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.ServerProcess;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * {@code bin/drill money-audit [--seed N] [--purchases N]}: a seeded campaign of compound faults
 * against a lastseat of its own, judged by the payment provider's ledger.
 *
 * <p>It starts a {@link FaultProxy} in front of the target's stubs and a lastseat (its own process,
 * H2 in a temporary directory) whose outside services are reached through that proxy, with fast
 * background settings. Then, following a {@link MoneyPlan} drawn from the seed: buyers arrive about
 * {@value MoneyPlan#BUYERS_AT_ONCE} at a time, each with its own Idempotency-Key and payment token,
 * and each payment call a buyer's purchase makes gets the answer the plan gave it (WireMock stubs
 * matched by the token, stepped by a scenario per buyer); the status lookups cycle through truthful
 * and faulty answers; the server is killed with SIGKILL and restarted on its database; all outside
 * services become unreachable for short windows (also just after WireMock resets a connection, so a
 * retry meets a refused connection); refunds and emails have outages; HELD purchases are cancelled
 * at random. Clients whose request was cut, or who were answered 202 or "in flight", ask again with
 * the same key and body until they get a final answer; after a 500, 503 or 504 ("nothing was
 * charged, try again") they try again a few times, as real clients do. When everything has settled,
 * the campaign acts as the operator (retries dead refunds) and {@link MoneyVerdict} audits: every
 * capture in the ledger is a CONFIRMED purchase or has exactly one refund; one capture per purchase
 * and per client key, one Idempotency-Key per purchase; no buyer whose purchase was captured was
 * told that nothing was charged; I1–I4 for every event; every purchase terminal or shown to an
 * operator; every key answered. A failure prints the seed and the history of each buyer who met a
 * broken rule, nothing about the others; its server's database and logs are kept.
 *
 * <p>Contract: the same seed and size give the same plan (not the same interleaving: a rerun of a
 * failing seed usually, not always, fails the same way); the target's lastseat is not used, only its
 * stubs; every wait is bounded; the proxy and every process it started are closed on every way out.
 *
 * <p>Hazard: it injects faults into the stubs it is given and kills the processes it starts; point it
 * at test stubs with the ledger extension only, never at real providers. The verdict is only as
 * good as the ledger: a capture the ledger does not record cannot be audited.
 */
final class MoneyAudit {
    /**
     * {@code reconcile.give-up-after} of the audited server: past it an unknown payment is shown to an
     * operator (PAYMENT_UNRESOLVED). Null leaves the key out, for a server that does not know it yet.
     */
    static final Duration GIVE_UP_AFTER = Duration.ofSeconds(8);
    /**
     * One buyer's retries and polls with its key; past it the buyer has no final answer. Two restarts
     * (a few seconds each), give-up-after and a settled lookup fit in it.
     */
    static final Duration CLIENT_BOUND = Duration.ofSeconds(45);
    static final Duration QUIET_BOUND = Duration.ofSeconds(60);
    /** How long a capture may take to be confirmed or refunded once everything else is quiet. */
    static final Duration SETTLE_BOUND = Duration.ofSeconds(15);
    static final Duration OPERATOR_BOUND = Duration.ofSeconds(20);
    /**
     * How long a PAYMENT_UNRESOLVED purchase may take to settle once the provider answers again: it is
     * asked every reconcile.max-backoff (1 s here), and a few lookups in a row may meet the lookup faults.
     */
    static final Duration RESOLVE_BOUND = Duration.ofSeconds(30);
    /** Answers after which a buyer tries again with its key, and how often. */
    static final Set<Integer> RETRIED = Set.of(500, 503, 504);
    static final int RETRIES = 3;

    private static final Set<String> OPEN = Set.of("HELD", "PAYING", "PAYMENT_UNKNOWN");
    private static final String UNRESOLVED = MoneyVerdict.UNRESOLVED;
    /** Problem types that do not say "nothing was charged". */
    private static final Set<String> NOT_A_REFUSAL = Set.of("idempotency-key-in-flight", "idempotency-key-reused",
                                                            "payment-refunded");

    private final Target target;
    private final MoneyPlan plan;
    private final Findings findings;
    private final long startedAt = System.currentTimeMillis();
    private final List<Client> clients = new ArrayList<>();
    private final List<String> events = new ArrayList<>();
    private final Map<String, String> stubLabels = new HashMap<>();
    private final Set<String> faultStubs = new LinkedHashSet<>();
    /** The scheduled faults as they happened (epoch millis → what), for the notes; the proxy keeps its own windows. */
    private final List<Map.Entry<Long, String>> happened = new CopyOnWriteArrayList<>();
    private final List<Long> killedAt = new CopyOnWriteArrayList<>();
    private final AtomicInteger outages = new AtomicInteger();
    private final AtomicInteger cancelled = new AtomicInteger();
    /**
     * The operator's hand (cancels, retries of dead refunds), pointed at whichever server is current;
     * the campaign's own timeouts (2 s to connect, 30 s to answer), shorter than the buyers'.
     */
    private final LastseatClient operator;
    private FaultProxy proxy;
    private Servers servers;
    private MoneyVerdict verdict;

    private MoneyAudit(Target target, MoneyPlan plan, Findings findings) {
        this.target = target;
        this.plan = plan;
        this.findings = findings;
        this.operator = new LastseatClient(target.service(), Duration.ofSeconds(2), Duration.ofSeconds(30));
    }

    static final String NAME = "money-audit";

    static Drill drill() {
        return new Drill(NAME,
                         "a seeded campaign: per-call payment faults (resets before/after capture, 4xx, 5xx, delays, late captures"
                         + " and declines), lying and failing lookups, unreachable windows, refund/email outages, cancels, kill -9",
                         "every capture is a CONFIRMED purchase or refunded once; no buyer told \"nothing was charged\" for a capture;"
                         + " one capture and one key per purchase; I1-I4; every purchase terminal or shown to an operator; every key answered",
                         MoneyAudit::run).onItsOwnServer();
    }

    static void run(Target target, Settings settings, Findings findings) {
        long seed = settings.auditSeed() != null ? settings.auditSeed() : System.currentTimeMillis();
        int purchases = settings.auditPurchases();
        // One window that outlasts give-up-after costs its length in run time: only long runs get one.
        Duration longWindow = GIVE_UP_AFTER != null && purchases >= 150 ? GIVE_UP_AFTER.plusSeconds(2) : null;
        MoneyAudit audit = new MoneyAudit(target, MoneyPlan.draw(seed, purchases, longWindow), findings);
        findings.figure("seed", seed);
        findings.figure("purchases", purchases);
        // Printed at once, not with the report: a campaign takes a minute or more, and an interrupted
        // one is worth repeating. The report says it again when a check fails.
        System.out.println("   seed " + seed + " (bin/drill money-audit --seed " + seed + " --purchases " + purchases + " repeats this plan)");
        try {
            audit.campaign();
        } finally {
            // Whatever happened, the last line carries every figure, in the order the report promises.
            findings.figure("faults", audit.faultsInjected());
            findings.figure("kills", audit.killedAt.size());
            findings.figure("captures", audit.verdict == null ? 0 : audit.verdict.captures());
            findings.figure("refunds", audit.verdict == null ? 0 : audit.verdict.refunds());
            List<String> violations = new ArrayList<>(audit.ownViolations);
            violations.addAll(audit.verdict == null ? List.of() : audit.verdict.violations());
            findings.figure("violations", violations);
        }
    }

    // --- the campaign ---

    private void campaign() {
        plan.describe().forEach(findings::note);
        Path dir = tempDir();
        try (FaultProxy faultProxy = FaultProxy.start(target.stubs(), 512);
             Servers own = new Servers(dir, faultProxy.url())) {
            proxy = faultProxy;
            servers = own;
            proxy.afterUpstreamReset(this::windowAfterReset);
            own.start();
            findings.note("lastseat's database and logs: " + dir);
            stubPlan();
            for (int e = 0; e < plan.events; e++) {
                events.add(own.target().newEvent(IntStream.rangeClosed(1, MoneyPlan.SEATS_PER_EVENT).mapToObj(n -> "A" + n)
                                                          .toArray(String[]::new)));
            }
            for (MoneyPlan.Buyer buyer : plan.buyers) {
                clients.add(new Client(buyer, plan.seed, events.get(buyer.event())));
            }
            long buying = System.nanoTime();
            buyersPhase();
            findings.note("buyers done in " + millisSince(buying) + " ms; final answers: " + describeFinals());
            noteFaultsAsTheyHappened();
            long settling = System.nanoTime();
            boolean quiet = awaitQuiet();
            findings.note((quiet ? "quiet " : "NOT quiet ") + millisSince(settling) + " ms after the last buyer"
                          + " (and past the latest a late capture can appear)");
            resolveUnresolved();
            operate();
            long accounting = System.nanoTime();
            boolean settled = await(SETTLE_BOUND, this::moneySettled);
            findings.note(settled ? "every capture accounted for " + millisSince(accounting) + " ms later"
                                  : "captures still unaccounted for after " + SETTLE_BOUND.toSeconds() + " s more");
            verdict = MoneyVerdict.judge(new MoneyVerdict.Evidence(plan, startedAt, clients, own.target(), target, events, stubLabels,
                                                                   proxy.windows(), killedAt, quiet, QUIET_BOUND, retriedRefunds,
                                                                   operatorProblems), findings);
        }
        // The database and the server logs are the evidence of a failing run; a passing one leaves nothing behind.
        if (findings.ok()) {
            deleteQuietly(dir);
        }
    }

    private final Object resets = new Object();
    private int resetTurn;
    private long lastWindowAfterReset;

    /**
     * The window (ms, 0 for none) that follows WireMock cutting a connection. Only after a cut charge
     * (the lookups are cut often), and not again within 1.5 s: each window fails every purchase in its
     * checks, and back to back they would starve the payments the campaign is about.
     */
    private long windowAfterReset(String request) {
        if (!request.startsWith("POST " + Faults.PAYMENTS + " ")) {
            return 0;
        }
        synchronized (resets) {
            if (System.currentTimeMillis() - lastWindowAfterReset < 1500) {
                return 0;
            }
            int millis = plan.afterReset[resetTurn++ % plan.afterReset.length];
            if (millis > 0) {
                lastWindowAfterReset = System.currentTimeMillis();
            }
            return millis;
        }
    }

    private void noteFaultsAsTheyHappened() {
        List<Map.Entry<Long, String>> faults = new ArrayList<>(happened);
        proxy.windows().forEach(w -> faults.add(Map.entry(w.startedAt(), "outside services unreachable "
                + relative(w.startedAt()) + "–" + relative(w.endedAt()) + " (" + w.why() + ")")));
        faults.stream().sorted(Map.Entry.comparingByKey()).forEach(f -> findings.note(f.getValue()));
    }

    /** Adds the plan's stubs in front of the file mappings. */
    private void stubPlan() {
        // A fraud check of ~100 ms keeps purchases HELD long enough for the cancels and the kills to find some.
        target.stub(Faults.lognormalCheck(Faults.FRAUD, 100, 0.4));
        for (MoneyPlan.Buyer buyer : plan.buyers) {
            if (!buyer.faulty()) {
                continue; // the file mapping captures through the ledger
            }
            String token = token(plan.seed, buyer.index());
            String scenario = "money-audit-payment-" + buyer.index();
            stubStep(Faults.inScenario(Faults.paymentForToken(token, buyer.first().response()), scenario, "Started", "call-2"),
                     "call 1: " + buyer.first().describe(), buyer.first().faulty());
            stubStep(Faults.inScenario(Faults.paymentForToken(token, buyer.second().response()), scenario, "call-2", "later"),
                     "call 2: " + buyer.second().describe(), buyer.second().faulty());
            stubStep(Faults.inScenario(Faults.paymentForToken(token, buyer.later().response()), scenario, "later", null),
                     "later call: " + buyer.later().describe(), buyer.later().faulty());
        }
        int n = plan.lookups.size();
        for (int i = 0; i < n; i++) {
            MoneyPlan.Lookup lookup = plan.lookups.get(i);
            stubStep(Faults.inScenario(Faults.lookup(lookup.response()), "money-audit-lookups", lookupState(i), lookupState((i + 1) % n)),
                     "lookup: " + lookup.label, lookup != MoneyPlan.Lookup.TRUTH);
        }
    }

    private static String lookupState(int i) {
        return i == 0 ? "Started" : "lookup-" + i;
    }

    private void stubStep(String mapping, String label, boolean fault) {
        String id = target.stub(mapping);
        stubLabels.put(id, label);
        if (fault) {
            faultStubs.add(id);
        }
    }

    /**
     * Buyers arrive with their planned gaps, at most {@value MoneyPlan#BUYERS_AT_ONCE} waiting for a
     * first answer; the schedule's actions fire as their arrival comes; cancels run alongside. Returns
     * when every buyer has a final answer or its bound passed, and every action is over.
     */
    private void buyersPhase() {
        Semaphore arriving = new Semaphore(MoneyPlan.BUYERS_AT_ONCE);
        AtomicBoolean buying = new AtomicBoolean(true);
        ExecutorService work = Executors.newVirtualThreadPerTaskExecutor();
        ExecutorService killer = Executors.newSingleThreadExecutor(Thread.ofVirtual().name("money-audit-killer").factory());
        List<Future<?>> buyers = new ArrayList<>();
        List<Future<?>> actions = new ArrayList<>();
        try {
            Future<?> cancels = work.submit(() -> cancelWhile(buying, new SplittableRandom(plan.seed).split()));
            int next = 0;
            for (Client client : clients) {
                for (; next < plan.schedule.size() && plan.schedule.get(next).atArrival() <= client.buyer.index(); next++) {
                    actions.add(act(plan.schedule.get(next), work, killer));
                }
                sleep(client.buyer.gapMillis());
                if (!arriving.tryAcquire(CLIENT_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("no buyer got a first answer within " + CLIENT_BOUND.toSeconds() + " s");
                }
                AtomicBoolean arrived = new AtomicBoolean();
                buyers.add(work.submit(() -> buy(client, () -> {
                    if (arrived.compareAndSet(false, true)) {
                        arriving.release();
                    }
                })));
            }
            for (; next < plan.schedule.size(); next++) {
                actions.add(act(plan.schedule.get(next), work, killer));
            }
            awaitAll(buyers, CLIENT_BOUND.plusSeconds(30), "buyers");
            buying.set(false);
            awaitAll(actions, Duration.ofSeconds(90), "scheduled faults");
            awaitAll(List.of(cancels), Duration.ofSeconds(30), "cancels");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } finally {
            buying.set(false);
            work.shutdownNow();
            killer.shutdownNow();
            awaitTermination(work);
            awaitTermination(killer);
        }
    }

    private Future<?> act(MoneyPlan.Action action, ExecutorService work, ExecutorService killer) {
        return switch (action.kind()) {
            case KILL -> killer.submit(() -> {
                // Kills queue up behind a restart: the moment is when it happens, not when it was due.
                long at = System.currentTimeMillis();
                servers.killAndRestart();
                happened.add(Map.entry(at, "kill -9 at " + relative(at) + " (due at arrival " + action.atArrival()
                                           + "); restarted on its database by " + relative(System.currentTimeMillis())));
            });
            case UNREACHABLE -> work.submit(() -> {
                long at = System.currentTimeMillis();
                // A window already open ends within a second: this one follows it rather than being lost.
                if (await(Duration.ofSeconds(2), () -> proxy.down("scheduled at arrival " + action.atArrival()))) {
                    try {
                        sleep(action.millis());
                    } finally {
                        proxy.up();
                    }
                } else {
                    happened.add(Map.entry(at, "(the window due at arrival " + action.atArrival() + ", " + relative(at)
                                               + ", was skipped: another stayed open)"));
                }
            });
            case REFUND_OUTAGE -> work.submit(() -> outage("/refunds", 503, action));
            case REFUND_REFUSAL -> work.submit(() -> outage("/refunds", 400, action));
            case EMAIL_OUTAGE -> work.submit(() -> outage("/emails", 503, action));
        };
    }

    private void outage(String path, int status, MoneyPlan.Action action) {
        long at = System.currentTimeMillis();
        String id = target.stub(Faults.status(path, status));
        outages.incrementAndGet();
        try {
            sleep(action.millis());
        } finally {
            target.unstub(id);
        }
        happened.add(Map.entry(at, path + " answered " + status + " " + relative(at) + "–" + relative(System.currentTimeMillis())
                                   + " (due at arrival " + action.atArrival() + ")"));
    }

    /**
     * One buyer: asks with its key until an answer is final or {@link #CLIENT_BOUND} passes. As a real
     * client does, it also tries again (same key, same body) after a 500, 503 or 504, which say
     * "nothing was charged, try again", up to {@value #RETRIES} times: if that was not true, the retry
     * is a second charge.
     */
    private void buy(Client client, Runnable firstAnswer) {
        long until = System.nanoTime() + CLIENT_BOUND.toNanos();
        client.startedAt = System.currentTimeMillis();
        int retries = 0;
        try {
            while (System.nanoTime() < until) {
                Heard heard = ask(client);
                if (heard.cut() == null) {
                    // A cut request keeps its place: buyers must not pile up while the server restarts.
                    firstAnswer.run();
                }
                if (heard.isFinal() && !(RETRIED.contains(heard.status()) && retries++ < RETRIES)) {
                    return;
                }
                // Cut by a kill (or refused while it restarts): soon, but spread over a second, or every
                // waiting buyer would rush the cold restarted server at once and run out of deadline;
                // pending or in flight: a little later; told to come back: when it was told, within reason.
                sleep(heard.cut() != null ? 150 + client.jitter.nextInt(850) : heard.isFinal() ? heard.retryAfterMillis() : 300);
            }
        } finally {
            firstAnswer.run();
        }
    }

    private Heard ask(Client client) {
        Target server = servers.target();
        Heard heard;
        try {
            heard = Heard.of(server.purchase(client.key, client.body), System.currentTimeMillis());
        } catch (UncheckedIOException e) {
            heard = new Heard(System.currentTimeMillis(), 0, "", "", null, 0, String.valueOf(e.getCause()));
        }
        client.heard.add(heard);
        return heard;
    }

    /** While the buyers buy: now and then a HELD purchase of a random event is cancelled. */
    private void cancelWhile(AtomicBoolean buying, SplittableRandom random) {
        int most = Math.max(3, plan.buyers.size() / 15);
        while (buying.get() && cancelled.get() < most) {
            sleep(100 + random.nextInt(100));
            try {
                Target server = servers.target();
                String event = events.get(random.nextInt(events.size()));
                for (JsonNode purchase : server.invariants(event).path("purchases")) {
                    if ("HELD".equals(purchase.path("state").asText()) && random.nextInt(2) == 0) {
                        Answer answer = operator.on(server.service()).cancel(purchase.path("id").asText());
                        // 409 (already paying or ended) and 404 are answers too: the race is the point.
                        if (answer.status() == 200) {
                            cancelled.incrementAndGet();
                        }
                    }
                }
            } catch (UncheckedIOException | IllegalStateException e) {
                if (Thread.currentThread().isInterrupted()) {
                    return;
                }
                // The server is being killed or restarted: try again next round.
            }
        }
    }

    // --- waiting for quiet, the operator ---

    /**
     * Until no purchase is HELD, PAYING or PAYMENT_UNKNOWN and no refund is pending; then past the
     * latest moment a late capture can still appear by itself, and quiet again.
     */
    private boolean awaitQuiet() {
        long until = System.nanoTime() + QUIET_BOUND.toNanos();
        if (!awaitUntil(until, this::quietNow)) {
            return false;
        }
        long lastCharge = target.journal("POST", Faults.PAYMENTS).stream().mapToLong(r -> r.path("loggedDate").asLong()).max().orElse(0);
        long wait = lastCharge + MoneyPlan.LATEST_PROCESSING_MILLIS + 500 - System.currentTimeMillis();
        if (wait > 0) {
            sleep((int) Math.min(wait, MoneyPlan.LATEST_PROCESSING_MILLIS + 500L));
        }
        return awaitUntil(until, this::quietNow);
    }

    /**
     * The purchases shown to an operator (PAYMENT_UNRESOLVED, past give-up-after while the provider
     * could not be asked) must be listed for the operator, and must settle by themselves once the
     * provider answers again — every unreachable window is over by now.
     */
    private void resolveUnresolved() {
        List<String> unresolved = purchasesIn(UNRESOLVED);
        if (unresolved.isEmpty()) {
            return;
        }
        // The reconciler settles them while we look: the listing and the database must agree at some moment.
        AtomicInteger listed = new AtomicInteger();
        boolean agreed = await(Duration.ofSeconds(5), () -> {
            Set<String> inDatabase = Set.copyOf(purchasesIn(UNRESOLVED));
            Set<String> inListing = new java.util.HashSet<>();
            servers.target().purchasesIn(UNRESOLVED).path("items").forEach(item -> inListing.add(item.path("id").asText()));
            listed.set(inListing.size());
            return inListing.containsAll(inDatabase) && Set.copyOf(purchasesIn(UNRESOLVED)).containsAll(inListing);
        });
        if (!findings.check(agreed, unresolved.size() + " purchases waited for an operator (PAYMENT_UNRESOLVED, seats held); "
                                    + "GET /purchases?state=" + UNRESOLVED + " listed them (" + listed.get() + " at the last look)")) {
            ownViolations.add("GET /purchases?state=" + UNRESOLVED + " did not list the purchases in that state");
        }
        // A buyer whose every later payment call is planned to fail (reset, 5xx, 422, too slow) never gets an
        // answer for its key from the provider: its purchase rightly stays PAYMENT_UNRESOLVED, seats held.
        Set<String> neverAnswered = unresolvedNeverAnswered();
        if (!neverAnswered.isEmpty()) {
            findings.note(neverAnswered.size() + " of them rightly stay PAYMENT_UNRESOLVED: every later call with their key is planned "
                          + "to fail, so the provider never answers it (sending again is the only question left)");
        }
        long since = System.nanoTime();
        boolean resolved = await(RESOLVE_BOUND, () -> neverAnswered.containsAll(purchasesIn(UNRESOLVED)));
        List<String> left = purchasesIn(UNRESOLVED).stream().filter(id -> !neverAnswered.contains(id)).toList();
        if (!findings.check(resolved, resolved
                ? "once the provider answered again, every one it could answer was settled by the reconciler, " + millisSince(since) + " ms later"
                : "still PAYMENT_UNRESOLVED " + RESOLVE_BOUND.toSeconds() + " s after the provider answered again: " + left)) {
            left.forEach(id -> ownViolations.add(id + " stayed PAYMENT_UNRESOLVED although the provider answered"));
        }
    }

    /** Breaches found before the verdict (the operator's view, settling after an outage); they join its violations. */
    private final List<String> ownViolations = new CopyOnWriteArrayList<>();

    /** The purchases now PAYMENT_UNRESOLVED whose buyer's every later payment call is planned to fail. */
    private Set<String> unresolvedNeverAnswered() {
        Set<String> found = new java.util.HashSet<>();
        String prefix = "money-audit-" + plan.seed + "-";
        for (String event : events) {
            for (JsonNode purchase : servers.target().invariants(event).path("purchases")) {
                String key = purchase.path("idempotencyKey").asText("");
                if (UNRESOLVED.equals(purchase.path("state").asText()) && key.startsWith(prefix)
                    && plan.buyers.get(Integer.parseInt(key.substring(prefix.length()))).later().faulty()) {
                    found.add(purchase.path("id").asText());
                }
            }
        }
        return found;
    }

    private List<String> purchasesIn(String state) {
        List<String> found = new ArrayList<>();
        for (String event : events) {
            for (JsonNode purchase : servers.target().invariants(event).path("purchases")) {
                if (state.equals(purchase.path("state").asText())) {
                    found.add(purchase.path("id").asText());
                }
            }
        }
        return found;
    }

    private boolean quietNow() {
        return openPurchases().isEmpty() && pending("refund") == 0;
    }

    private List<String> openPurchases() {
        List<String> open = new ArrayList<>();
        for (String event : events) {
            for (JsonNode purchase : servers.target().invariants(event).path("purchases")) {
                if (OPEN.contains(purchase.path("state").asText())) {
                    open.add(purchase.path("id").asText() + " " + purchase.path("state").asText());
                }
            }
        }
        return open;
    }

    private int pending(String kind) {
        int n = 0;
        for (JsonNode item : servers.target().outbox("pending").path("items")) {
            n += kind.equals(item.path("kind").asText()) ? 1 : 0;
        }
        return n;
    }

    private final List<String> retriedRefunds = new ArrayList<>();
    private final List<String> operatorProblems = new ArrayList<>();

    /**
     * The operator: every DEAD refund is money owed to a buyer, so each is retried
     * ({@code POST /outbox/{id}/retry}) once the refund receiver is healthy (every outage is over by
     * now), and must then be sent.
     */
    private void operate() {
        for (JsonNode item : servers.target().outbox("dead").path("items")) {
            if (!"refund".equals(item.path("kind").asText())) {
                continue;
            }
            String purchase = item.path("purchaseId").asText();
            retriedRefunds.add(purchase);
            Answer answer = operator.on(servers.target().service()).retryOutbox(item.path("id").asText());
            if (answer.status() >= 300) {
                operatorProblems.add("POST /outbox/" + item.path("id").asText() + "/retry (refund of " + purchase + ") answered "
                                     + answer.status() + " " + answer.type());
            }
        }
        if (!retriedRefunds.isEmpty()) {
            await(OPERATOR_BOUND, () -> deadRefunds().isEmpty() && pending("refund") == 0);
        }
    }

    private List<String> deadRefunds() {
        List<String> dead = new ArrayList<>();
        servers.target().outbox("dead").path("items").forEach(item -> {
            if ("refund".equals(item.path("kind").asText())) {
                dead.add(item.path("purchaseId").asText());
            }
        });
        return dead;
    }

    /** Every capture confirmed, refunded once or shown to an operator, and no refund pending. */
    private boolean moneySettled() {
        return MoneyVerdict.capturesAccountedFor(servers.target(), target, events) && pending("refund") == 0;
    }

    private String relative(long epochMillis) {
        return MoneyVerdict.relative(epochMillis, startedAt);
    }

    private int faultsInjected() {
        int served = 0;
        try {
            for (MoneyVerdict.Served call : MoneyVerdict.journal(target)) {
                served += faultStubs.contains(call.stubId()) ? 1 : 0;
            }
        } catch (RuntimeException e) {
            // the stubs are gone: count what else was injected
        }
        return served + (proxy == null ? 0 : proxy.windows().size()) + outages.get();
    }

    private String describeFinals() {
        return clients.stream().map(Client::lastAnswer)
                .collect(Collectors.groupingBy(h -> h == null ? "none" : h.isFinal() ? h.status() + (h.type().isEmpty() ? "" : " " + h.type())
                                                       + (h.state().isEmpty() ? "" : " " + h.state()) : "not final (" + h.status() + ")",
                                               TreeMap::new, Collectors.counting()))
                .entrySet().stream().map(e -> e.getValue() + "× " + e.getKey()).collect(Collectors.joining(", "))
               + "; " + cancelled.get() + " purchases cancelled while HELD";
    }

    // --- what a client heard ---

    /** One answer a client got, or a request that was cut ({@code cut} says how). */
    record Heard(long at, int status, String type, String state, String purchaseId, int retryAfterMillis, String cut) {
        static Heard of(Answer answer, long at) {
            String type = "";
            String state = "";
            String id = null;
            if (answer.body().startsWith("{")) {
                try {
                    JsonNode body = answer.json();
                    type = body.path("type").asText("").replace("urn:lastseat:problem:", "");
                    state = body.path("state").asText("");
                    id = body.hasNonNull("purchaseId") ? body.path("purchaseId").asText() : body.path("id").asText(null);
                } catch (UncheckedIOException e) {
                    type = "(not JSON)";
                }
            }
            int retryAfter = 500;
            try {
                // Retry-After is in seconds; a campaign has no time for more than one.
                retryAfter = answer.header("Retry-After") == null ? 500 : Math.min(1000, 1000 * Integer.parseInt(answer.header("Retry-After")));
            } catch (NumberFormatException e) {
                // an HTTP date or garbage: the default pause
            }
            return new Heard(at, answer.status(), type, state, id, retryAfter, null);
        }

        /** A client stops asking: neither cut, nor pending (202), nor "still in flight" — or shown to an operator. */
        boolean isFinal() {
            if (cut != null) {
                return false;
            }
            if (UNRESOLVED.equals(state)) {
                return true;
            }
            return status != 202 && !(status == 409 && "idempotency-key-in-flight".equals(type));
        }

        /** An answer that tells the buyer no money was taken. */
        boolean saysNothingCharged() {
            return cut == null && (status >= 400 && !NOT_A_REFUSAL.contains(type)
                                   || status == 200 && ("RELEASED".equals(state) || "EXPIRED".equals(state)));
        }

        boolean sameAs(Heard other) {
            return status == other.status && type.equals(other.type) && state.equals(other.state)
                   && java.util.Objects.equals(cut == null ? null : cut.split(":")[0], other.cut == null ? null : other.cut.split(":")[0]);
        }

        String describeVerdict() {
            return status + (type.isEmpty() ? "" : " " + type) + (state.isEmpty() ? "" : " " + state);
        }

        String describe(long start) {
            return MoneyVerdict.relative(at, start) + " " + (cut != null ? "cut (" + cut + ")" : describeVerdict());
        }
    }

    // --- the buyers, the servers ---

    /** One buyer's client: its key, its body, and everything it heard. */
    static final class Client {
        final MoneyPlan.Buyer buyer;
        final String key;
        final String body;
        final List<Heard> heard = new CopyOnWriteArrayList<>();
        /** Spreads its retries after a cut; from the seed, like everything else. */
        final SplittableRandom jitter;
        volatile long startedAt;

        Client(MoneyPlan.Buyer buyer, long seed, String eventId) {
            this.buyer = buyer;
            this.key = "money-audit-" + seed + "-" + buyer.index();
            this.jitter = new SplittableRandom(seed * 31 + buyer.index());
            ObjectNode body = Target.object().put("eventId", eventId);
            if (buyer.seats().isEmpty()) {
                body.put("quantity", buyer.quantity());
            } else {
                body.set("seats", Target.JSON.valueToTree(buyer.seats()));
            }
            body.putObject("buyer").put("id", "buyer-" + buyer.index()).put("email", "buyer-" + buyer.index() + "@example.com");
            body.put("paymentToken", token(seed, buyer.index()));
            this.body = body.toString();
        }

        /** The last answer that was not a cut request, or null. */
        Heard lastAnswer() {
            for (int i = heard.size() - 1; i >= 0; i--) {
                if (heard.get(i).cut() == null) {
                    return heard.get(i);
                }
            }
            return null;
        }
    }

    static String token(long seed, int buyer) {
        return "tok-" + seed + "-" + buyer;
    }

    /** The audited lastseat: one process at a time on one database, replaced after each kill. */
    private final class Servers implements AutoCloseable {
        private final Path dir;
        private final URI outside;
        private final List<ServerProcess> started = new CopyOnWriteArrayList<>();
        private volatile ServerProcess current;
        private volatile Target currentTarget;

        Servers(Path dir, URI outside) {
            this.dir = dir;
            this.outside = outside;
        }

        /** Starts one, warms it, and only then lets the buyers at it. */
        void start() {
            ServerProcess process = ServerProcess.start(dir, outside, serverSettings());
            started.add(process);
            current = process;
            Target fresh = target.on(process.instance());
            warmUp(fresh);
            currentTarget = fresh;
        }

        /**
         * A cold JVM is slow for its first purchases: the buyers waiting through a restart would rush it
         * and run out of deadline before the payment. A few purchases of its own warm it, on an event of
         * their own, paying with the token the file stubs decline without the ledger: the whole path
         * runs, and the ledger records nothing.
         */
        private void warmUp(Target server) {
            String event = server.newEvent(30);
            Target.atMost(10, 30, i -> server.purchase("warm-up-" + event + "-" + i,
                    LastseatClient.quantityBody(event, 1, "warm-up").replace("tok_ok", "tok_declined")));
        }

        /** The server buyers talk to now; during a restart, the dead one (its requests are refused). */
        Target target() {
            return currentTarget;
        }

        synchronized void killAndRestart() {
            current.kill();
            killedAt.add(System.currentTimeMillis());
            start();
        }

        @Override
        public void close() {
            started.forEach(ServerProcess::close);
        }
    }

    /** Fast background work, so that a campaign settles in seconds rather than minutes. */
    static Map<String, String> serverSettings() {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("reconcile.settle-time", "300ms");
        settings.put("reconcile.interval", "200ms");
        settings.put("reconcile.backoff", "200ms");
        settings.put("reconcile.max-backoff", "1s");
        if (GIVE_UP_AFTER != null) {
            settings.put("reconcile.give-up-after", GIVE_UP_AFTER.toMillis() + "ms");
        }
        settings.put("purchase.abandoned-after", "1s");
        settings.put("purchase.sweep-interval", "200ms");
        settings.put("outbox.interval", "200ms");
        settings.put("outbox.backoff", "200ms");
        settings.put("outbox.max-backoff", "1s");
        return settings;
    }

    // --- plumbing ---

    private static boolean await(Duration bound, BooleanSupplier condition) {
        return awaitUntil(System.nanoTime() + bound.toNanos(), condition);
    }

    /** Polls {@code condition} every 200 ms until it holds or {@code until} (nanoTime) passes; a failing read counts as "not yet". */
    private static boolean awaitUntil(long until, BooleanSupplier condition) {
        while (true) {
            try {
                if (condition.getAsBoolean()) {
                    return true;
                }
            } catch (UncheckedIOException e) {
                // not answering right now: ask again
            }
            if (System.nanoTime() >= until) {
                return false;
            }
            sleep(200);
        }
    }

    private static void awaitAll(List<Future<?>> futures, Duration bound, String what) throws InterruptedException {
        long until = System.nanoTime() + bound.toNanos();
        for (Future<?> future : futures) {
            try {
                future.get(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                throw new IllegalStateException(what + " failed: " + e.getCause(), e.getCause());
            } catch (TimeoutException e) {
                throw new IllegalStateException(what + " did not finish within " + bound.toSeconds() + " s", e);
            }
        }
    }

    private static void awaitTermination(ExecutorService executor) {
        try {
            if (!executor.awaitTermination(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the campaign's threads did not stop within 20 s of being interrupted");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void sleep(int millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static long millisSince(long nanoTime) {
        return (System.nanoTime() - nanoTime) / 1_000_000;
    }

    private static void deleteQuietly(Path dir) {
        try (java.util.stream.Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // a temporary directory left behind is harmless
        }
    }

    private static Path tempDir() {
        try {
            return Files.createTempDirectory("lastseat-money-audit");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
