package lastseat.drills;

import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.ServerProcess;
import lastseat.testkit.TempDirs;
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
 * services become unreachable for short windows, their connections refused or timing out (also just
 * after WireMock resets a charge's connection, so the retry meets a shut door); refunds and emails
 * have outages; HELD purchases are cancelled at random. Clients whose request was cut, or who were
 * answered 202 or "in flight", ask again with the same key and body until they get a final answer;
 * after a 500, 503 or 504 ("nothing was charged, try again") they try again a few times, as real
 * clients do.
 *
 * <p>Then it judges in two phases ({@link MoneyVerdict}). At the stated bound after the last
 * purchase started (computed from the settings it gives its server, and printed), with every fault
 * still on, every purchase must be terminal or PAYMENT_UNRESOLVED, and the operator's listing must
 * show the latter. Then the faults lift — the provider answers every call and lookup truthfully, as
 * it does once it recovers — the reconciler keeps asking, the operator retries dead refunds, and once
 * all is quiet the ledger judges: every capture CONFIRMED or refunded exactly once, nothing left
 * open, one capture per purchase, no buyer told "nothing was charged" for a capture, I1–I4, every
 * key answered. A failure prints the seed and, for each breach, only the history that shows it; the
 * server's database and logs are kept.
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
     * operator (PAYMENT_UNRESOLVED).
     */
    static final Duration GIVE_UP_AFTER = Duration.ofSeconds(8);
    /**
     * One buyer's retries and polls with its key, counted while a server runs; past it the buyer has no final
     * answer. Give-up-after and a settled lookup fit in it. The time from a kill until its restart is ready
     * does not count ({@link RunningTime}).
     */
    static final Duration CLIENT_BOUND = Duration.ofSeconds(45);
    /**
     * What a busy two-core machine adds to the stated bound: database writes and scheduling under the
     * campaign's load. Printed with the bound.
     */
    static final Duration MACHINE_MARGIN = Duration.ofSeconds(2);
    /**
     * Once the faults lift, how long everything may take to end: a PAYMENT_UNRESOLVED purchase is asked
     * every reconcile.max-backoff (1 s here), a refund waits at most outbox.max-backoff (1 s), and a
     * capture the provider processes late appears within {@link MoneyPlan#LATEST_PROCESSING_MILLIS}.
     */
    static final Duration QUIET_BOUND = Duration.ofSeconds(60);
    /** How long a capture may take to be confirmed or refunded once everything else is quiet. */
    static final Duration SETTLE_BOUND = Duration.ofSeconds(15);
    static final Duration OPERATOR_BOUND = Duration.ofSeconds(20);
    /** Answers after which a buyer tries again with its key, and how often. */
    static final Set<Integer> RETRIED = Set.of(500, 503, 504);
    static final int RETRIES = 3;

    private static final String UNRESOLVED = MoneyVerdict.UNRESOLVED;
    /**
     * The refusals of a purchase: the problem types that say its seats were released and nothing was
     * charged (docs/API.md, "What an answer says about money"). Every other 4xx or 5xx is about the
     * request — busy, a limit, bad input, the key's first request still running — and promises nothing
     * about an earlier request with the same key.
     */
    static final Set<String> NOTHING_CHARGED = Set.of("payment-declined", "fraud-declined", "seats-taken", "sold-out",
                                                      "hold-expired", "purchase-cancelled", "payment-refused",
                                                      "check-unavailable", "payment-capacity-full", "payment-unavailable",
                                                      "deadline-passed");

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
    private final List<MoneyVerdict.Kill> kills = new CopyOnWriteArrayList<>();
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
                         + " and declines), lying and failing lookups, unreachable windows (connections refused or timing out),"
                         + " refund/email outages, cancels, kill -9",
                         "at the stated bound, faults on: every purchase terminal or shown to an operator; once the provider recovers:"
                         + " every capture CONFIRMED or refunded once, nothing open; no buyer told \"nothing was charged\" for a capture;"
                         + " one capture and one key per purchase; I1-I4; every key answered",
                         MoneyAudit::run).onItsOwnServer();
    }

    static void run(Target target, Settings settings, Findings findings) {
        long seed = settings.auditSeed() != null ? settings.auditSeed() : System.currentTimeMillis();
        int purchases = settings.auditPurchases();
        // One window that outlasts give-up-after costs its length in run time: only long runs get one.
        Duration longWindow = purchases >= 150 ? GIVE_UP_AFTER.plusSeconds(2) : null;
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
            findings.figure("kills", audit.kills.size());
            findings.figure("captures", audit.verdict == null ? 0 : audit.verdict.captures());
            findings.figure("refunds", audit.verdict == null ? 0 : audit.verdict.refunds());
            findings.figure("violations", audit.verdict == null ? audit.ownViolations.stream().map(MoneyVerdict.Violation::text).toList()
                                                                : audit.verdict.violations());
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
            MoneyVerdict.AtBound atBound = atTheBound();
            unresolvedListed();
            long lifted = liftFaults();
            boolean quiet = awaitQuiet();
            findings.note((quiet ? "quiet " : "NOT quiet ") + (System.currentTimeMillis() - lifted) + " ms after the faults lifted"
                          + " (and past the latest a late capture can appear)");
            operate();
            long accounting = System.nanoTime();
            boolean settled = await(SETTLE_BOUND, this::moneySettled);
            findings.note(settled ? "every capture accounted for " + millisSince(accounting) + " ms later"
                                  : "captures still unaccounted for after " + SETTLE_BOUND.toSeconds() + " s more");
            MoneyVerdict.Snapshot snapshot = MoneyVerdict.Snapshot.read(own.target(), target, events, true);
            verdict = MoneyVerdict.judge(new MoneyVerdict.Evidence(plan, startedAt, clients, events, stubLabels, proxy.windows(), kills,
                                                                   atBound, new MoneyVerdict.Quiet(lifted, quiet, QUIET_BOUND),
                                                                   retriedRefunds, ownViolations), snapshot, findings);
        }
        // The database and the server logs are the evidence of a failing run; a passing one leaves nothing behind.
        if (findings.ok()) {
            TempDirs.deleteQuietly(dir);
        }
    }

    private final Object resets = new Object();
    private int resetTurn;
    private long lastWindowAfterReset;

    /**
     * The window that follows WireMock cutting a connection, if any. Only after a cut charge (the
     * lookups are cut often), and not again within 1.5 s: each window fails every purchase in its
     * checks, and back to back they would starve the payments the campaign is about.
     */
    private FaultProxy.Outage windowAfterReset(String request) {
        if (!request.startsWith("POST " + Faults.PAYMENTS + " ")) {
            return FaultProxy.Outage.NONE;
        }
        synchronized (resets) {
            if (System.currentTimeMillis() - lastWindowAfterReset < 1500) {
                return FaultProxy.Outage.NONE;
            }
            int turn = resetTurn++ % plan.afterReset.length;
            int millis = plan.afterReset[turn];
            if (millis > 0) {
                lastWindowAfterReset = System.currentTimeMillis();
            }
            return new FaultProxy.Outage(millis, plan.afterResetTimesOut[turn] ? FaultProxy.Door.TIMED_OUT : FaultProxy.Door.REFUSED);
        }
    }

    private void noteFaultsAsTheyHappened() {
        List<Map.Entry<Long, String>> faults = new ArrayList<>(happened);
        proxy.windows().forEach(w -> faults.add(Map.entry(w.startedAt(), "outside services unreachable "
                + relative(w.startedAt()) + "–" + relative(w.endedAt()) + " (" + w.describe() + ")")));
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
                awaitArrival(arriving);
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
            awaitWhileUp(buyers, CLIENT_BOUND.plusSeconds(30), "buyers");
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
                MoneyVerdict.Kill kill = servers.killAndRestart();
                happened.add(Map.entry(kill.at(), "kill -9 at " + relative(kill.at()) + " (due at arrival " + action.atArrival()
                                                  + "); restarted on its database by " + relative(kill.restartedAt())));
            });
            case UNREACHABLE, UNREACHABLE_TIMING_OUT -> work.submit(() -> {
                long at = System.currentTimeMillis();
                FaultProxy.Door door = action.kind() == MoneyPlan.Kind.UNREACHABLE ? FaultProxy.Door.REFUSED : FaultProxy.Door.TIMED_OUT;
                // A window already open ends within a second: this one follows it rather than being lost.
                if (await(Duration.ofSeconds(2), () -> proxy.down("scheduled at arrival " + action.atArrival(), door))) {
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
        RunningTime.Mark start = servers.running.mark();
        client.startedAt = System.currentTimeMillis();
        int retries = 0;
        try {
            while (!start.ranFor(CLIENT_BOUND)) {
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
        long sent = System.currentTimeMillis();
        Heard heard;
        try {
            heard = Heard.of(server.purchase(client.key, client.body), sent, System.currentTimeMillis());
        } catch (UncheckedIOException e) {
            heard = new Heard(sent, System.currentTimeMillis(), 0, "", "", null, 0, String.valueOf(e.getCause()));
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

    // --- the first phase: the bound, faults on ---

    /** The stated bound, and what it is made of. */
    record Bound(Duration total, String explained) {
    }

    /**
     * How long after the last purchase started (or the last restart) every purchase is terminal or
     * PAYMENT_UNRESOLVED, from the settings the campaign gives its server. A purchase's payment is
     * known or unknown by purchase.deadline; one whose process was killed is recovered
     * purchase.abandoned-after past its deadline, at the next sweep. An unknown payment is shown to
     * an operator within reconcile.give-up-after + the longer of reconcile.interval and one question
     * (two reconcile.call-timeout: a lookup, then the resend) — GUARANTEES.md. A question cut by a
     * kill leaves a lease of 4 × call-timeout, shorter than that whole path. Plus
     * {@link #MACHINE_MARGIN}.
     */
    static Bound stateBound(Map<String, String> settings) {
        Duration deadline = duration(settings.get("purchase.deadline"));
        Duration abandoned = duration(settings.get("purchase.abandoned-after"));
        Duration sweep = duration(settings.get("purchase.sweep-interval"));
        Duration giveUp = duration(settings.get("reconcile.give-up-after"));
        Duration interval = duration(settings.get("reconcile.interval"));
        Duration question = duration(settings.get("reconcile.call-timeout")).multipliedBy(2);
        Duration reconcile = interval.compareTo(question) > 0 ? interval : question;
        Duration total = deadline.plus(abandoned).plus(sweep).plus(giveUp).plus(reconcile).plus(MACHINE_MARGIN);
        return new Bound(total, "deadline " + millis(deadline) + " + abandoned-after " + millis(abandoned) + " + sweep-interval "
                                + millis(sweep) + " + give-up-after " + millis(giveUp) + " + max(reconcile.interval " + millis(interval)
                                + ", 2 × call-timeout " + millis(question) + ") + " + millis(MACHINE_MARGIN) + " for this machine");
    }

    private static String millis(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }

    /** "800ms", "2s", "1m": the forms serverSettings uses. */
    static Duration duration(String text) {
        if (text.endsWith("ms")) {
            return Duration.ofMillis(Long.parseLong(text.substring(0, text.length() - 2)));
        }
        long n = Long.parseLong(text.substring(0, text.length() - 1));
        return switch (text.charAt(text.length() - 1)) {
            case 's' -> Duration.ofSeconds(n);
            case 'm' -> Duration.ofMinutes(n);
            default -> throw new IllegalArgumentException("not a duration the campaign writes: " + text);
        };
    }

    /**
     * Waits until the stated bound has passed since the last purchase started (or the last restart,
     * whose server recovers what a kill left), faults still on, and reads every purchase's state.
     */
    private MoneyVerdict.AtBound atTheBound() {
        Bound bound = stateBound(serverSettings());
        long lastStart = 0;
        for (String id : allPurchases().keySet()) {
            List<MoneyVerdict.Step> steps = MoneyVerdict.Snapshot.timeline(servers.target(), id);
            lastStart = Math.max(lastStart, steps.isEmpty() ? 0 : steps.getFirst().startedAt());
        }
        long lastRestart = kills.stream().mapToLong(MoneyVerdict.Kill::restartedAt).max().orElse(0);
        long anchor = Math.max(lastStart, lastRestart);
        String anchoredOn = lastStart >= lastRestart ? "the last purchase started" : "the last restart";
        long wait = anchor + bound.total().toMillis() - System.currentTimeMillis();
        if (wait > 0) {
            sleep((int) wait);
        }
        Map<String, String> states = allPurchases();
        long checked = System.currentTimeMillis();
        findings.note("the stated bound: " + bound.total().toMillis() + " ms after " + anchoredOn + " (" + relative(anchor)
                      + "), faults still on: looked at " + relative(checked));
        return new MoneyVerdict.AtBound(anchor, anchoredOn, bound.total(), bound.explained(), checked, states);
    }

    /**
     * The purchases shown to an operator (PAYMENT_UNRESOLVED) must be listed for the operator. The
     * reconciler may settle one while we look: the listing and the database must agree at some moment.
     */
    private void unresolvedListed() {
        List<String> unresolved = purchasesIn(UNRESOLVED);
        if (unresolved.isEmpty()) {
            return;
        }
        AtomicInteger listed = new AtomicInteger();
        Set<String> missing = new java.util.TreeSet<>();
        boolean agreed = await(Duration.ofSeconds(5), () -> {
            Set<String> inDatabase = Set.copyOf(purchasesIn(UNRESOLVED));
            Set<String> inListing = new java.util.HashSet<>();
            servers.target().purchasesIn(UNRESOLVED).path("items").forEach(item -> inListing.add(item.path("id").asText()));
            listed.set(inListing.size());
            missing.clear();
            inDatabase.stream().filter(id -> !inListing.contains(id)).forEach(missing::add);
            return missing.isEmpty() && Set.copyOf(purchasesIn(UNRESOLVED)).containsAll(inListing);
        });
        if (!findings.check(agreed, unresolved.size() + " purchases waited for an operator (" + UNRESOLVED + ", seats held); "
                                    + "GET /purchases?state=" + UNRESOLVED + " listed them (" + listed.get() + " at the last look)")) {
            ownViolations.add(new MoneyVerdict.Violation("GET /purchases?state=" + UNRESOLVED + " did not list " + missing,
                                                         Set.copyOf(missing), Set.of()));
        }
    }

    /** Breaches found before the verdict (the operator's listing); they join its violations. */
    private final List<MoneyVerdict.Violation> ownViolations = new CopyOnWriteArrayList<>();

    // --- the second phase: the provider recovers ---

    /**
     * The provider recovers, as it does in life: every stub of the plan goes, so every charge and
     * lookup is answered truthfully by the file mappings and the ledger, and no reset opens a window.
     * Returns when (epoch millis).
     */
    private long liftFaults() {
        proxy.afterUpstreamReset(request -> FaultProxy.Outage.NONE);
        stubLabels.keySet().forEach(target::unstub);
        long lifted = System.currentTimeMillis();
        findings.note("faults lifted at " + relative(lifted) + ": the provider answers every call and lookup truthfully from now on");
        return lifted;
    }

    /**
     * Until no purchase is open, PAYMENT_UNRESOLVED included, and no refund is pending; then past the
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

    /** Every purchase of the campaign and its state, as the database has them now. */
    private Map<String, String> allPurchases() {
        Map<String, String> states = new LinkedHashMap<>();
        for (String event : events) {
            for (JsonNode purchase : servers.target().invariants(event).path("purchases")) {
                states.put(purchase.path("id").asText(), purchase.path("state").asText());
            }
        }
        return states;
    }

    private List<String> purchasesIn(String state) {
        return allPurchases().entrySet().stream().filter(p -> state.equals(p.getValue())).map(Map.Entry::getKey).toList();
    }

    private boolean quietNow() {
        return allPurchases().values().stream().allMatch(MoneyVerdict.TERMINAL::contains) && pending("refund") == 0;
    }

    private int pending(String kind) {
        int n = 0;
        for (JsonNode item : servers.target().outbox("pending").path("items")) {
            n += kind.equals(item.path("kind").asText()) ? 1 : 0;
        }
        return n;
    }

    private final List<String> retriedRefunds = new ArrayList<>();

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
            String said = "POST /outbox/" + item.path("id").asText() + "/retry (the refund of " + purchase + ") answered "
                          + answer.status() + (answer.type().isEmpty() ? "" : " " + answer.type());
            if (!findings.check(answer.status() < 300, "the operator queued a DEAD refund again: " + said)) {
                ownViolations.add(MoneyVerdict.Violation.about(purchase, said));
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

    /** Every capture confirmed or refunded once, and no refund pending. */
    private boolean moneySettled() {
        return MoneyVerdict.Snapshot.read(servers.target(), target, events, false).unaccountedCaptures().isEmpty()
               && pending("refund") == 0;
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

    /** One answer a client got to the request it sent at {@code sentAt}, or a request that was cut ({@code cut} says how). */
    record Heard(long sentAt, long at, int status, String type, String state, String purchaseId, int retryAfterMillis, String cut) {
        static Heard of(Answer answer, long sentAt, long at) {
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
            return new Heard(sentAt, at, answer.status(), type, state, id, retryAfter, null);
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
            return cut == null && (status >= 400 && NOTHING_CHARGED.contains(type)
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
        /** Stops from each kill until its restart is warm. */
        final RunningTime running = RunningTime.system();

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

        synchronized MoneyVerdict.Kill killAndRestart() {
            long at = running.whileDown(() -> {
                current.kill();
                long killed = System.currentTimeMillis();
                start();
                return killed;
            });
            MoneyVerdict.Kill kill = new MoneyVerdict.Kill(at, System.currentTimeMillis());
            kills.add(kill);
            return kill;
        }

        @Override
        public void close() {
            started.forEach(ServerProcess::close);
        }
    }

    /**
     * Fast background work, so that a campaign settles in seconds rather than minutes. The deadline,
     * the call timeouts and the connect timeout are the defaults, written out because the stated bound
     * is computed from them (and a connect must time out well within the deadline).
     */
    static Map<String, String> serverSettings() {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("purchase.deadline", "800ms");
        settings.put("outside.connect-timeout", "250ms");
        settings.put("reconcile.settle-time", "300ms");
        settings.put("reconcile.interval", "200ms");
        settings.put("reconcile.call-timeout", "2s");
        settings.put("reconcile.backoff", "200ms");
        settings.put("reconcile.max-backoff", "1s");
        settings.put("reconcile.give-up-after", GIVE_UP_AFTER.toMillis() + "ms");
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

    /** A place among the buyers waiting for a first answer, within {@link #CLIENT_BOUND} of a server running. */
    private void awaitArrival(Semaphore arriving) throws InterruptedException {
        RunningTime.Mark start = servers.running.mark();
        while (!arriving.tryAcquire(250, TimeUnit.MILLISECONDS)) {
            if (start.ranFor(CLIENT_BOUND)) {
                throw new IllegalStateException("no buyer got a first answer within " + CLIENT_BOUND.toSeconds() + " s of a server running");
            }
        }
    }

    /** {@link #awaitAll}, with {@code bound} counted while a server runs, as the buyers count theirs. */
    private void awaitWhileUp(List<Future<?>> futures, Duration bound, String what) throws InterruptedException {
        RunningTime.Mark start = servers.running.mark();
        awaitAll(futures, () -> start.ranFor(bound), what + " did not finish within " + bound.toSeconds() + " s of a server running", what);
    }

    private static void awaitAll(List<Future<?>> futures, Duration bound, String what) throws InterruptedException {
        long until = System.nanoTime() + bound.toNanos();
        awaitAll(futures, () -> System.nanoTime() >= until, what + " did not finish within " + bound.toSeconds() + " s", what);
    }

    /** Every future's end, checking {@code over} every 250 ms; when it says the time is up, fails with {@code late}. */
    private static void awaitAll(List<Future<?>> futures, BooleanSupplier over, String late, String what) throws InterruptedException {
        for (Future<?> future : futures) {
            while (true) {
                try {
                    future.get(250, TimeUnit.MILLISECONDS);
                    break;
                } catch (ExecutionException e) {
                    throw new IllegalStateException(what + " failed: " + e.getCause(), e.getCause());
                } catch (TimeoutException e) {
                    if (over.getAsBoolean()) {
                        throw new IllegalStateException(late, e);
                    }
                }
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

    private static Path tempDir() {
        try {
            return Files.createTempDirectory("lastseat-money-audit");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
