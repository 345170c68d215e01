package lastseat.drills;

import com.fasterxml.jackson.databind.JsonNode;
import lastseat.drills.MoneyAudit.Client;
import lastseat.drills.MoneyAudit.Heard;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The money audit's judge, in two phases, with the provider's ledger as the only judge of money.
 *
 * <p>First, at the stated bound after the last purchase started (or the last restart), with every
 * fault still on: each purchase is terminal or PAYMENT_UNRESOLVED, the state an operator sees
 * ({@link AtBound}, taken by the campaign). Then the faults lift, as a provider recovers in life,
 * the reconciler keeps asking, and once all is quiet ({@link Snapshot}): every capture belongs to a
 * CONFIRMED purchase or has exactly one refund; nothing is left open, PAYMENT_UNRESOLVED included;
 * one capture per purchase and per client key, one Idempotency-Key per purchase; no buyer was told
 * "nothing was charged" for a captured purchase; I1, I2, I4 in the database and I3 as charged =
 * confirmed + refunded; no refund DEAD; every key answered. Nothing is excused by what the plan
 * meant to do: only the ledger and the database judge.
 *
 * <p>Each rule is one {@link Findings#check}; each breach one {@link Violation}, naming the
 * purchases and keys whose history shows it. A failing run prints the seed and, for each breach,
 * only that history: the buyer's requests and answers, the timeline of its purchases, the provider
 * calls about them with the fault each met, the ledger's records for their keys, and the kills and
 * unreachable windows that fell among those events — in time order. Nothing about other buyers.
 *
 * <p>Contract: {@link #judge} reads nothing but its arguments, so a history can be judged without a
 * server (see MoneyVerdictTest).
 *
 * <p>Hazard: an answer that does not name its purchase (a problem) is attributed by time to the
 * purchases of its key that existed when it was received; a buyer who retried after a false "nothing
 * was charged" may therefore see that breach reported once per later answer, folded into one line.
 */
final class MoneyVerdict {
    /** Breaches whose history a failing run prints; the rest are listed in their check's line. */
    static final int HISTORIES = 12;
    static final String UNRESOLVED = "PAYMENT_UNRESOLVED";
    static final Set<String> TERMINAL = Set.of("CONFIRMED", "RELEASED", "EXPIRED", "REFUNDED");

    /** One broken rule: its line, and the purchases and client keys whose history shows it. */
    record Violation(String text, Set<String> purchases, Set<String> keys) {
        static Violation about(String purchase, String text) {
            return new Violation(text, Set.of(purchase), Set.of());
        }
    }

    /** A kill -9 of the server at {@code at}, and when its successor took the buyers ({@code restartedAt}); epoch millis. */
    record Kill(long at, long restartedAt) {
    }

    /**
     * The first phase: every purchase's state at {@code checkedAt}, which is {@code bound} after
     * {@code anchor} (the last purchase's start or the last restart, epoch millis) or later when the
     * buyers were still asking then; {@code explained} says what the bound is made of.
     */
    record AtBound(long anchor, String anchoredOn, Duration bound, String explained, long checkedAt, Map<String, String> states) {
    }

    /** The second phase: when the faults lifted, and whether all was quiet within {@code bound} after. */
    record Quiet(long liftedAt, boolean reached, Duration bound) {
    }

    /**
     * What the campaign hands over: its plan and clock, its buyers, the events audited, the labels of
     * the stubs it added, the windows and kills it caused, the two phases, the dead refunds the
     * operator retried, and breaches it found itself (the operator's listing).
     */
    record Evidence(MoneyPlan plan, long startedAt, List<Client> clients, List<String> events, Map<String, String> stubLabels,
                    List<FaultProxy.Window> windows, List<Kill> kills, AtBound atBound, Quiet quiet, List<String> retriedRefunds,
                    List<Violation> campaignViolations) {
    }

    private final Evidence e;
    private final Snapshot s;
    private final Findings findings;
    private final List<Violation> violations = new ArrayList<>();

    private MoneyVerdict(Evidence e, Snapshot s, Findings findings) {
        this.e = e;
        this.s = s;
        this.findings = findings;
    }

    /** Judges the evidence and the snapshot taken after quiet; records every check in {@code findings}. */
    static MoneyVerdict judge(Evidence evidence, Snapshot snapshot, Findings findings) {
        MoneyVerdict verdict = new MoneyVerdict(evidence, snapshot.derived(), findings);
        verdict.checkAll();
        return verdict;
    }

    List<String> violations() {
        return violations.stream().map(Violation::text).toList();
    }

    int captures() {
        return s.captures.size();
    }

    int refunds() {
        return s.refunds.size();
    }

    private void checkAll() {
        everyPurchaseShownWithinTheBound();
        campaignViolations();
        moneyRule();
        oneChargeEach();
        noFalseNothingCharged();
        databaseInvariants();
        everyPurchaseEnded();
        everyKeyAnswered();
        chargedIsConfirmedPlusRefunded();
        deadRefunds();
        if (!findings.ok()) {
            findings.note("FAILED with seed " + e.plan().seed + "; rerun: bin/drill money-audit --seed " + e.plan().seed
                          + " --purchases " + e.plan().buyers.size());
            histories();
        }
    }

    // --- the first phase ---

    /** At the bound, faults still on: every purchase terminal or shown to an operator. */
    private void everyPurchaseShownWithinTheBound() {
        AtBound at = e.atBound();
        List<Violation> open = new ArrayList<>();
        at.states().forEach((id, state) -> {
            if (!TERMINAL.contains(state) && !UNRESOLVED.equals(state)) {
                open.add(Violation.about(id, id + " was still " + state + " " + seconds(at.checkedAt() - at.anchor())
                                             + " after " + at.anchoredOn() + " (the bound is " + seconds(at.bound().toMillis()) + ")"));
            }
        });
        long late = at.checkedAt() - at.anchor() - at.bound().toMillis();
        record(open, "every purchase terminal or " + UNRESOLVED + " within the stated bound, faults still on: "
                     + seconds(at.bound().toMillis()) + " after " + at.anchoredOn() + " (" + relative(at.anchor()) + "); "
                     + at.explained() + (late > 1000 ? "; looked " + seconds(late) + " later, when the buyers had stopped asking" : ""),
               describeStates(at.states().values()));
    }

    private void campaignViolations() {
        violations.addAll(e.campaignViolations());
    }

    // --- the second phase: after the faults lifted and all went quiet ---

    /** Every capture is a CONFIRMED purchase or has exactly one refund (the Money rule); nothing waits for an operator. */
    private void moneyRule() {
        List<Violation> money = s.unaccountedCaptures();
        record(money, "every capture is a CONFIRMED purchase or has exactly one refund", money.isEmpty()
                ? s.captures.size() + " captures, " + s.refunds.size() + " refunds" : "");
    }

    /** One capture per purchase and per client key; every payment call of a purchase carried its one key. */
    private void oneChargeEach() {
        List<Violation> keys = new ArrayList<>();
        s.capturesByPurchase.forEach((id, list) -> {
            if (list.size() > 1) {
                keys.add(Violation.about(id, id + " has " + list.size() + " captures"));
            }
        });
        // A retry after a false "nothing was charged" is a second purchase, and a second charge.
        s.purchasesByKey.forEach((key, ids) -> {
            List<String> charged = ids.stream().filter(s.capturesByPurchase::containsKey).toList();
            if (charged.size() > 1) {
                keys.add(new Violation("the buyer with key " + key + " was charged " + charged.size() + " times, for purchases "
                                       + String.join(", ", charged), Set.copyOf(charged), Set.of(key)));
            }
        });
        s.paymentKeysByPurchase.forEach((id, used) -> {
            if (!used.equals(Set.of(Target.paymentKey(id)))) {
                keys.add(Violation.about(id, id + " was charged with keys " + used));
            }
        });
        record(keys, "one capture per purchase and per client key; one Idempotency-Key per purchase", keys.isEmpty()
                ? s.paymentCalls + " payment calls for " + s.paymentKeysByPurchase.size() + " purchases" : "");
    }

    /**
     * No buyer told "nothing was charged" for a purchase the provider captured. An answer that names
     * its purchase is about that one; a problem that does not is about the key's purchases that existed
     * when it was received (a retry's purchase comes later).
     */
    private void noFalseNothingCharged() {
        List<Violation> told = new ArrayList<>();
        for (Client client : e.clients()) {
            Map<String, List<Heard>> falsely = new LinkedHashMap<>();
            for (Heard heard : client.heard) {
                if (!heard.saysNothingCharged()) {
                    continue;
                }
                List<String> about = heard.purchaseId() != null ? List.of(heard.purchaseId())
                        : s.purchasesByKey.getOrDefault(client.key, List.of()).stream()
                                .filter(id -> s.capturesByPurchase.containsKey(id) && s.createdAt(id) <= heard.at()).toList();
                about.stream().filter(s.capturesByPurchase::containsKey)
                        .forEach(id -> falsely.computeIfAbsent(id, k -> new ArrayList<>()).add(heard));
            }
            falsely.forEach((id, answers) -> told.add(new Violation(
                    id + " (buyer " + client.buyer.index() + ") was answered " + answers.getFirst().describeVerdict()
                    + (answers.size() > 1 ? " (and " + (answers.size() - 1) + " more such answers)" : "")
                    + " but the provider captured " + s.capturesByPurchase.get(id).getFirst().path("id").asText(),
                    Set.of(id), Set.of(client.key))));
        }
        record(told, "no buyer was told \"nothing was charged\" for a purchase the provider captured", "");
    }

    /** I1, I2, I4 in the database, for every event. */
    private void databaseInvariants() {
        List<Violation> database = new ArrayList<>();
        s.invariantViolations.forEach((event, list) -> list.forEach(v -> database.add(new Violation("event " + event + ": " + v,
                s.purchases.values().stream().filter(p -> v.contains(p.id())).map(Purchase::id).collect(Collectors.toSet()), Set.of()))));
        record(database, "I1, I2, I4 in the database for all " + e.events().size() + " events", database.isEmpty()
                ? "one ticket per sold seat, available + held + sold = capacity, no stale hold" : "");
    }

    /** Once the provider answered again and all was quiet: every purchase terminal, none left for an operator. */
    private void everyPurchaseEnded() {
        List<Violation> open = new ArrayList<>();
        s.purchases.values().forEach(p -> {
            if (!TERMINAL.contains(p.state())) {
                open.add(Violation.about(p.id(), p.id() + " is still " + p.state() + " after the provider answered again"));
            }
        });
        Quiet quiet = e.quiet();
        record(open, "once the faults lifted (" + relative(quiet.liftedAt()) + "), every purchase terminal, none left "
                     + UNRESOLVED + (quiet.reached() ? "" : " (quiet not reached within " + quiet.bound().toSeconds() + " s)"),
               describeStates(s.purchases.values().stream().map(Purchase::state).toList()));
    }

    /** Every key answered: its client's last answer final. */
    private void everyKeyAnswered() {
        List<Violation> unanswered = new ArrayList<>();
        for (Client client : e.clients()) {
            Heard last = client.lastAnswer();
            if (last == null || !last.isFinal()) {
                unanswered.add(new Violation("buyer " + client.buyer.index() + " (" + client.key + ") has no final answer after "
                                             + MoneyAudit.CLIENT_BOUND.toSeconds() + " s of a server running: last "
                                             + (last == null ? "nothing" : last.describe(e.startedAt())),
                                             Set.of(), Set.of(client.key)));
            }
        }
        record(unanswered, "every key got a final answer", "");
    }

    /** I3 after reconciliation: charged purchases = confirmed + refunded. */
    private void chargedIsConfirmedPlusRefunded() {
        long charged = s.capturesByPurchase.size();
        long confirmed = s.purchases.values().stream().filter(p -> "CONFIRMED".equals(p.state())).count();
        long refunded = s.purchases.values().stream().filter(p -> "REFUNDED".equals(p.state())).count();
        String line = "charged purchases (" + charged + ") = CONFIRMED (" + confirmed + ") + REFUNDED (" + refunded + ")";
        List<Violation> broken = new ArrayList<>();
        if (charged != confirmed + refunded) {
            Set<String> odd = new TreeSet<>();
            s.capturesByPurchase.keySet().stream().filter(id -> !Set.of("CONFIRMED", "REFUNDED").contains(s.stateOf(id))).forEach(odd::add);
            s.purchases.values().stream().filter(p -> Set.of("CONFIRMED", "REFUNDED").contains(p.state()))
                    .filter(p -> !s.capturesByPurchase.containsKey(p.id())).forEach(p -> odd.add(p.id()));
            broken.add(new Violation(line.replace(" = ", " != ") + "; the difference: " + String.join(", ", odd), odd, Set.of()));
        }
        record(broken, line, "");
    }

    /** A DEAD refund is money owed: the operator retried each, and each must have been sent. */
    private void deadRefunds() {
        List<Violation> dead = new ArrayList<>();
        s.deadRefunds.forEach(id -> dead.add(Violation.about(id, "the refund of " + id + " is still DEAD")));
        record(dead, e.retriedRefunds().isEmpty() && dead.isEmpty() ? "no refund went DEAD"
                     : e.retriedRefunds().size() + " DEAD refund(s) retried by the operator" + (dead.isEmpty() ? " and sent" : ""), "");
    }

    private void record(List<Violation> breaches, String rule, String detail) {
        String shown = breaches.isEmpty() ? detail : firstFew(breaches.stream().map(Violation::text).toList());
        if (!findings.check(breaches.isEmpty(), rule + (shown.isEmpty() ? "" : ": " + shown))) {
            violations.addAll(breaches);
        }
    }

    private static String firstFew(List<String> lines) {
        return String.join("; ", lines.subList(0, Math.min(5, lines.size()))) + (lines.size() > 5 ? "; and " + (lines.size() - 5) + " more" : "");
    }

    private static String describeStates(java.util.Collection<String> states) {
        return states.stream().collect(Collectors.groupingBy(st -> st, TreeMap::new, Collectors.counting()))
                .entrySet().stream().map(en -> en.getValue() + " " + en.getKey()).collect(Collectors.joining(", "));
    }

    private static String seconds(long millis) {
        return String.format(Locale.ROOT, "%.1f s", millis / 1000.0);
    }

    // --- the histories ---

    /** One history per breach, the shortest that shows it; breaches with the same subject share one. */
    private void histories() {
        Map<Subject, List<Violation>> bySubject = new LinkedHashMap<>();
        for (Violation violation : violations) {
            bySubject.computeIfAbsent(subject(violation.purchases(), violation.keys()), k -> new ArrayList<>()).add(violation);
        }
        int shown = 0;
        for (Map.Entry<Subject, List<Violation>> same : bySubject.entrySet()) {
            if (shown == HISTORIES) {
                findings.note("(" + (bySubject.size() - HISTORIES) + " more histories left out; their breaches are listed above)");
                return;
            }
            shown++;
            findings.note("history " + shown + ": " + same.getValue().stream().map(Violation::text).collect(Collectors.joining("; ")));
            List<String> lines = history(same.getKey());
            if (lines.isEmpty()) {
                findings.note("    (nothing recorded about it)");
            }
            lines.forEach(line -> findings.note("    " + line));
        }
    }

    /** Whose events a history shows: these purchases, and the buyers of these client keys. */
    private record Subject(Set<String> purchases, Set<String> keys) {
    }

    /**
     * The breach's purchases (for a breach about a key alone, every purchase of the key) and the
     * buyers who made them.
     */
    private Subject subject(Set<String> purchases, Set<String> keys) {
        Set<String> ids = new TreeSet<>(purchases);
        if (ids.isEmpty()) {
            keys.forEach(key -> ids.addAll(s.purchasesByKey.getOrDefault(key, List.of())));
        }
        Set<String> clientKeys = new TreeSet<>(keys);
        ids.forEach(id -> {
            if (s.purchases.containsKey(id)) {
                clientKeys.add(s.purchases.get(id).key());
            }
        });
        return new Subject(ids, clientKeys);
    }

    /** One event of a history: when (epoch millis) and what. */
    private record Event(long at, String what) {
    }

    /**
     * The events of the subject's purchases and buyers, in time order, with the kills and windows
     * that fell among them.
     */
    private List<String> history(Subject subject) {
        List<Event> events = new ArrayList<>();
        for (Client client : e.clients()) {
            if (subject.keys().contains(client.key)) {
                events.addAll(asked(client));
            }
        }
        for (String id : subject.purchases()) {
            events.addAll(purchaseEvents(id));
        }
        if (events.isEmpty()) {
            return List.of();
        }
        long from = events.stream().mapToLong(Event::at).min().orElseThrow();
        long to = events.stream().mapToLong(Event::at).max().orElseThrow();
        e.kills().stream().filter(k -> k.at() >= from && k.at() <= to).forEach(k -> events.add(new Event(k.at(),
                "kill -9 of the server; its successor took requests from " + relative(k.restartedAt()))));
        e.windows().stream().filter(w -> w.endedAt() >= from && w.startedAt() <= to).forEach(w -> events.add(new Event(w.startedAt(),
                "outside services unreachable until " + relative(w.endedAt()) + " (" + w.describe() + ")")));
        events.sort(Comparator.comparingLong(Event::at));
        return events.stream().map(ev -> relative(ev.at()) + "  " + ev.what()).toList();
    }

    /** What one buyer asked and heard; a run of the same answer (a 202 polled for seconds) is one line. */
    private List<Event> asked(Client client) {
        List<Event> events = new ArrayList<>();
        List<Heard> heard = List.copyOf(client.heard);
        String who = "buyer " + client.buyer.index() + " (key " + client.key + ")";
        for (int i = 0; i < heard.size(); ) {
            int j = i;
            while (j + 1 < heard.size() && heard.get(j + 1).sameAs(heard.get(i))) {
                j++;
            }
            Heard h = heard.get(i);
            String answer = h.cut() != null ? "cut (" + h.cut() + ")" : h.describeVerdict()
                                                                       + (h.purchaseId() == null ? "" : " for " + h.purchaseId());
            events.add(new Event(h.sentAt(), who + " POST /purchases → " + answer + " at " + relative(h.at())
                                             + (j > i ? "; asked " + (j - i + 1) + " times so, the last at " + relative(heard.get(j).sentAt()) : "")));
            i = j + 1;
        }
        return events;
    }

    /** One purchase: its timeline, the provider calls about it with the fault each met, and the ledger's records. */
    private List<Event> purchaseEvents(String id) {
        List<Event> events = new ArrayList<>();
        for (Step step : s.timelines.getOrDefault(id, List.of())) {
            events.add(new Event(step.startedAt(), id + " " + step.step() + " → " + (step.outcome() == null ? "(open)" : step.outcome())));
        }
        List<Served> served = s.journal.stream().filter(call -> call.concerns(id)).sorted(Comparator.comparingLong(Served::at)).toList();
        // A reconciler asking the same question every second is one line, not sixty.
        for (int i = 0; i < served.size(); ) {
            int j = i;
            while (j + 1 < served.size() && served.get(j + 1).sameAs(served.get(i), e.stubLabels())) {
                j++;
            }
            events.add(new Event(served.get(i).at(), "provider got " + served.get(i).describe(e.stubLabels())
                                                     + (j > i ? " ×" + (j - i + 1) + " until " + relative(served.get(j).at()) : "")));
            i = j + 1;
        }
        for (JsonNode payment : s.payments) {
            if (id.equals(payment.path("purchaseId").asText())) {
                events.add(new Event(payment.path("processedAt").asLong(), "ledger: " + payment.path("idempotencyKey").asText() + " "
                        + payment.path("status").asText() + " as " + payment.path("id").asText()
                        + (payment.hasNonNull("reason") ? " (" + payment.path("reason").asText() + ")" : "")));
            }
        }
        for (JsonNode capture : s.capturesByPurchase.getOrDefault(id, List.of())) {
            for (JsonNode refund : s.refundsOf(capture)) {
                events.add(new Event(refund.path("recordedAt").asLong(), "ledger: refund " + refund.path("id").asText() + " of "
                        + capture.path("id").asText() + " (key " + refund.path("idempotencyKey").asText() + ")"));
            }
        }
        return events;
    }

    private String relative(long epochMillis) {
        return relative(epochMillis, e.startedAt());
    }

    static String relative(long epochMillis, long start) {
        return String.format(Locale.ROOT, "+%.3fs", (epochMillis - start) / 1000.0);
    }

    // --- what the judge reads ---

    /** Everything WireMock served, oldest first ({@code GET /__admin/requests}). */
    static List<Served> journal(Target stubs) {
        List<Served> served = new ArrayList<>();
        stubs.requests().path("requests").forEach(event -> served.add(Served.of(event)));
        Collections.reverse(served);
        return served;
    }

    /** One request WireMock served: when, what, the purchase it was about, and how it was answered. */
    record Served(long at, String method, String url, String body, String key, String outcome, String stubId) {
        static Served of(JsonNode event) {
            JsonNode request = event.path("request");
            JsonNode definition = event.path("responseDefinition");
            String outcome = definition.hasNonNull("fault") ? "reset" : String.valueOf(event.path("response").path("status").asInt());
            if (definition.path("fixedDelayMilliseconds").asInt() > 0) {
                outcome += " after " + definition.path("fixedDelayMilliseconds").asInt() + " ms";
            }
            return new Served(request.path("loggedDate").asLong(), request.path("method").asText(), request.path("url").asText(),
                              request.path("body").asText(""), request.path("headers").path("Idempotency-Key").asText(""),
                              outcome, event.path("stubMapping").path("id").asText(""));
        }

        /** The same request answered the same way (through a stub with the same label). */
        boolean sameAs(Served other, Map<String, String> labels) {
            return method.equals(other.method) && url.equals(other.url) && outcome.equals(other.outcome)
                   && Objects.equals(labels.get(stubId), labels.get(other.stubId));
        }

        boolean concerns(String purchaseId) {
            return url.contains(purchaseId) || body.contains(purchaseId) || key.contains(purchaseId);
        }

        String describe(Map<String, String> labels) {
            String label = labels.get(stubId);
            return method + " " + url + (key.isEmpty() || url.contains(key) ? "" : " (key " + key + ")") + " → " + outcome
                   + (label == null ? "" : " [" + label + "]");
        }
    }

    /** One purchase as the database has it. */
    record Purchase(String id, String event, String state, String key, String paymentId) {
    }

    /** One step of a purchase's timeline; epoch millis, {@code outcome} null while open. */
    record Step(String step, long startedAt, String outcome) {
    }

    /**
     * The database, the ledger and the journal, read once ({@link #read}) or written by a test.
     * {@link #derived()} computes the indexes the rules use.
     */
    static final class Snapshot {
        final Map<String, Purchase> purchases = new LinkedHashMap<>();
        final Map<String, List<Step>> timelines = new HashMap<>();
        final Map<String, List<String>> invariantViolations = new LinkedHashMap<>();
        final List<JsonNode> payments = new ArrayList<>();
        final List<JsonNode> captures = new ArrayList<>();
        final List<JsonNode> refunds = new ArrayList<>();
        final List<String> deadRefunds = new ArrayList<>();
        List<Served> journal = List.of();

        final Map<String, List<JsonNode>> capturesByPurchase = new LinkedHashMap<>();
        final Map<String, List<String>> purchasesByKey = new HashMap<>();
        final Map<String, Set<String>> paymentKeysByPurchase = new HashMap<>();
        int paymentCalls;

        /**
         * The purchases of {@code events}, the ledger and — when {@code full} — the timelines, the
         * journal and the DEAD refunds (large; the verdict needs them, a poll does not).
         */
        static Snapshot read(Target server, Target stubs, List<String> events, boolean full) {
            Snapshot s = new Snapshot();
            for (String event : events) {
                JsonNode db = server.invariants(event);
                List<String> violations = new ArrayList<>();
                db.path("violations").forEach(v -> violations.add(v.asText()));
                if (!violations.isEmpty()) {
                    s.invariantViolations.put(event, violations);
                }
                for (JsonNode purchase : db.path("purchases")) {
                    String id = purchase.path("id").asText();
                    s.purchases.put(id, new Purchase(id, event, purchase.path("state").asText(), purchase.path("idempotencyKey").asText(),
                                                     purchase.hasNonNull("paymentId") ? purchase.path("paymentId").asText() : null));
                }
            }
            JsonNode ledger = stubs.ledger();
            ledger.path("payments").forEach(s.payments::add);
            ledger.path("captures").forEach(s.captures::add);
            ledger.path("refunds").forEach(s.refunds::add);
            if (!full) {
                return s.derived();
            }
            s.purchases.keySet().forEach(id -> s.timelines.put(id, timeline(server, id)));
            server.outbox("dead").path("items").forEach(item -> {
                if ("refund".equals(item.path("kind").asText())) {
                    s.deadRefunds.add(item.path("purchaseId").asText());
                }
            });
            s.journal = journal(stubs);
            return s.derived();
        }

        /** A purchase's timeline ({@code GET /purchases/{id}}); empty when it cannot be read. */
        static List<Step> timeline(Target server, String id) {
            List<Step> steps = new ArrayList<>();
            try {
                server.purchaseView(id).path("timeline").forEach(step -> steps.add(new Step(step.path("step").asText(),
                        millis(step.path("startedAt").asText()), step.hasNonNull("outcome") ? step.path("outcome").asText() : null)));
            } catch (RuntimeException ex) {
                // unreadable now: the history shows no timeline rather than no history
            }
            return steps;
        }

        private static long millis(String iso) {
            try {
                return Instant.parse(iso).toEpochMilli();
            } catch (RuntimeException ex) {
                return 0;
            }
        }

        /**
         * The indexes, from what was read or written. Every capture counts, also one of a purchase the
         * database does not have: a charge nobody can account for is the worst breach of all.
         */
        Snapshot derived() {
            capturesByPurchase.clear();
            purchasesByKey.clear();
            paymentKeysByPurchase.clear();
            paymentCalls = 0;
            captures.forEach(capture -> capturesByPurchase.computeIfAbsent(capture.path("purchaseId").asText(), k -> new ArrayList<>()).add(capture));
            purchases.values().forEach(p -> purchasesByKey.computeIfAbsent(p.key(), k -> new ArrayList<>()).add(p.id()));
            for (Served call : journal) {
                if (!"POST".equals(call.method()) || !call.url().startsWith(Faults.PAYMENTS)) {
                    continue;
                }
                String purchaseId = purchaseIdOf(call.body());
                if (purchases.containsKey(purchaseId)) {
                    paymentKeysByPurchase.computeIfAbsent(purchaseId, k -> new TreeSet<>()).add(call.key().isEmpty() ? "(none)" : call.key());
                    paymentCalls++;
                }
            }
            return this;
        }

        String stateOf(String id) {
            Purchase purchase = purchases.get(id);
            return purchase == null ? "(not in the database)" : purchase.state();
        }

        /** When the purchase was created (its first step); 0 when unknown, so it counts as earlier. */
        long createdAt(String id) {
            List<Step> steps = timelines.getOrDefault(id, List.of());
            return steps.isEmpty() ? 0 : steps.getFirst().startedAt();
        }

        /** The refunds the provider recorded for this capture (by payment id, or by purchase for a ledger without it). */
        List<JsonNode> refundsOf(JsonNode capture) {
            String paymentId = capture.path("id").asText();
            String purchaseId = capture.path("purchaseId").asText();
            return refunds.stream().filter(r -> r.hasNonNull("paymentId") ? paymentId.equals(r.path("paymentId").asText())
                                                : purchaseId.equals(r.path("purchaseId").asText())).toList();
        }

        /** The Money rule, capture by capture, with no state excused: one breach for each capture that breaks it. */
        List<Violation> unaccountedCaptures() {
            List<Violation> wrong = new ArrayList<>();
            for (JsonNode capture : captures) {
                String id = capture.path("purchaseId").asText();
                String state = stateOf(id);
                int refunded = refundsOf(capture).size();
                boolean right = "CONFIRMED".equals(state) ? refunded == 0 : refunded == 1;
                if (!right) {
                    wrong.add(Violation.about(id, id + " is " + state + " but the provider captured " + capture.path("id").asText() + " ("
                                                  + (refunded == 0 ? "no refund" : refunded + " refunds") + ")"));
                }
                String recorded = purchases.containsKey(id) ? purchases.get(id).paymentId() : null;
                if (right && recorded != null && !recorded.equals(capture.path("id").asText())) {
                    wrong.add(Violation.about(id, id + " is " + state + " with payment " + recorded + " but the provider captured "
                                                  + capture.path("id").asText()));
                }
            }
            purchases.values().forEach(p -> {
                if (("CONFIRMED".equals(p.state()) || "REFUNDED".equals(p.state())) && !capturesByPurchase.containsKey(p.id())) {
                    wrong.add(Violation.about(p.id(), p.id() + " is " + p.state() + " without a capture in the ledger"));
                }
            });
            return wrong;
        }

        private static String purchaseIdOf(String body) {
            try {
                return Target.JSON.readTree(body).path("purchaseId").asText("?");
            } catch (IOException ex) {
                return "?";
            }
        }
    }
}
