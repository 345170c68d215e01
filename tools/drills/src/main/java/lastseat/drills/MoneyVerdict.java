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
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The money audit's judge. Once a campaign has settled it reads the provider's ledger, WireMock's
 * journal and the database (through {@code GET /drills/invariants}), checks them rule by rule — each
 * rule one {@link Findings#check}, each breach one line in {@link #violations()} — and, for a failing
 * run, writes the history of every buyer who met a broken rule: its plan, what its client heard, the
 * kills and unreachable windows while it asked, and for each of its purchases concerned the timeline,
 * the provider calls and the ledger records. Nothing about the other buyers.
 *
 * <p>The ledger is the judge of money: a capture is a charge whatever lastseat believes. A purchase
 * in PAYMENT_UNRESOLVED (shown to an operator) may hold a capture without a verdict yet; it is
 * reported, not counted as a breach.
 *
 * <p>Hazard: an answer that does not name its purchase (a problem) is attributed by time to the
 * purchases of its key that existed when it was received; a buyer who retried after a false "nothing
 * was charged" may therefore see that breach reported once per later answer, folded into one line.
 */
final class MoneyVerdict {
    /** Purchases whose history a failing run prints; the rest are counted. */
    static final int HISTORIES = 20;
    static final String UNRESOLVED = "PAYMENT_UNRESOLVED";
    private static final Set<String> TERMINAL = Set.of("CONFIRMED", "RELEASED", "EXPIRED", "REFUNDED");

    /**
     * What the campaign hands over: its plan and clock, its buyers, the server and stubs to read, the
     * events audited, the labels of the stubs it added, the windows and kills it caused, whether it
     * went quiet in time, and what the operator did about dead refunds.
     */
    record Evidence(MoneyPlan plan, long startedAt, List<Client> clients, Target server, Target stubs, List<String> events,
                    Map<String, String> stubLabels, List<FaultProxy.Window> windows, List<Long> kills, boolean quiet,
                    Duration quietBound, List<String> retriedRefunds, List<String> operatorProblems) {
    }

    private final Evidence e;
    private final Findings findings;
    private final Snapshot s;
    private final List<String> violations = new ArrayList<>();
    private final Set<String> suspects = new LinkedHashSet<>();
    private final Set<Client> suspectBuyers = new LinkedHashSet<>();

    private MoneyVerdict(Evidence e, Findings findings) {
        this.e = e;
        this.findings = findings;
        this.s = Snapshot.take(e.server(), e.stubs(), e.events(), true);
    }

    /** Reads everything once and records every check in {@code findings}. */
    static MoneyVerdict judge(Evidence evidence, Findings findings) {
        MoneyVerdict verdict = new MoneyVerdict(evidence, findings);
        verdict.checkAll();
        return verdict;
    }

    List<String> violations() {
        return List.copyOf(violations);
    }

    int captures() {
        return s.captures.size();
    }

    int refunds() {
        return s.refunds.size();
    }

    /** While settling: every capture confirmed, refunded once or shown to an operator (the journal is not read). */
    static boolean capturesAccountedFor(Target server, Target stubs, List<String> events) {
        return Snapshot.take(server, stubs, events, false).unaccountedCaptures().isEmpty();
    }

    private void checkAll() {
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

    /** Every capture is a CONFIRMED purchase or has exactly one refund (the Money rule). */
    private void moneyRule() {
        List<String> money = s.unaccountedCaptures();
        money.forEach(line -> suspects.add(line.substring(0, line.indexOf(' '))));
        long unresolved = s.captures.stream().filter(c -> UNRESOLVED.equals(s.stateOf(c.path("purchaseId").asText()))).count();
        record(money, "every capture is a CONFIRMED purchase or has exactly one refund", money.isEmpty()
                ? s.captures.size() + " captures, " + s.refunds.size() + " refunds"
                  + (unresolved > 0 ? ", " + unresolved + " captured purchases waiting for an operator (PAYMENT_UNRESOLVED)" : "")
                : firstFew(money));
    }

    /** One capture per purchase and per client key; every payment call of a purchase carried its one key. */
    private void oneChargeEach() {
        List<String> keys = new ArrayList<>();
        s.capturesByPurchase.forEach((id, list) -> {
            if (list.size() > 1) {
                keys.add(id + " has " + list.size() + " captures");
                suspects.add(id);
            }
        });
        // A retry after a false "nothing was charged" is a second purchase, and a second charge.
        s.purchasesByKey.forEach((key, ids) -> {
            List<String> charged = ids.stream().filter(s.capturesByPurchase::containsKey).toList();
            if (charged.size() > 1) {
                keys.add("the buyer with key " + key + " was charged " + charged.size() + " times, for purchases " + String.join(", ", charged));
                suspects.addAll(charged);
            }
        });
        s.paymentKeysByPurchase.forEach((id, used) -> {
            if (!used.equals(Set.of("lastseat-payment-" + id))) {
                keys.add(id + " was charged with keys " + used);
                suspects.add(id);
            }
        });
        record(keys, "one capture per purchase and per client key; one Idempotency-Key per purchase", keys.isEmpty()
                ? s.paymentCalls + " payment calls for " + s.paymentKeysByPurchase.size() + " purchases" : firstFew(keys));
    }

    /**
     * No buyer told "nothing was charged" for a purchase the provider captured. An answer that names
     * its purchase is about that one; a problem that does not is about the key's purchases that existed
     * when it was received (a retry's purchase comes later).
     */
    private void noFalseNothingCharged() {
        List<String> told = new ArrayList<>();
        for (Client client : e.clients()) {
            Map<String, List<Heard>> falsely = new LinkedHashMap<>();
            for (Heard heard : client.heard) {
                if (!heard.saysNothingCharged()) {
                    continue;
                }
                List<String> about = heard.purchaseId() != null ? List.of(heard.purchaseId())
                        : s.purchasesByKey.getOrDefault(client.key, List.of()).stream()
                                .filter(id -> s.capturesByPurchase.containsKey(id) && createdAt(id) <= heard.at()).toList();
                about.stream().filter(s.capturesByPurchase::containsKey)
                        .forEach(id -> falsely.computeIfAbsent(id, k -> new ArrayList<>()).add(heard));
            }
            falsely.forEach((id, answers) -> {
                told.add(id + " (buyer " + client.buyer.index() + ") was answered " + answers.getFirst().describeVerdict()
                         + (answers.size() > 1 ? " (and " + (answers.size() - 1) + " more such answers)" : "")
                         + " but the provider captured " + s.capturesByPurchase.get(id).getFirst().path("id").asText());
                suspects.add(id);
            });
        }
        record(told, "no buyer was told \"nothing was charged\" for a purchase the provider captured", told.isEmpty() ? "" : firstFew(told));
    }

    /** I1, I2, I4 in the database, for every event. */
    private void databaseInvariants() {
        List<String> database = new ArrayList<>();
        s.invariantViolations.forEach((event, list) -> list.forEach(v -> database.add("event " + event + ": " + v)));
        record(database, "I1, I2, I4 in the database for all " + e.events().size() + " events", database.isEmpty()
                ? "one ticket per sold seat, available + held + sold = capacity, no stale hold" : firstFew(database));
    }

    /** Every purchase terminal, or shown to an operator. */
    private void everyPurchaseEnded() {
        List<String> open = new ArrayList<>();
        s.states.forEach((id, state) -> {
            if (!TERMINAL.contains(state) && !UNRESOLVED.equals(state)) {
                open.add(id + " is still " + state);
                suspects.add(id);
            }
        });
        record(open, "every purchase terminal or PAYMENT_UNRESOLVED"
                     + (e.quiet() ? "" : " (quiet not reached within " + e.quietBound().toSeconds() + " s)"),
               s.describeStates() + (open.isEmpty() ? "" : "; " + firstFew(open)));
    }

    /** Every key answered: its client's last answer final, or its purchase shown to an operator. */
    private void everyKeyAnswered() {
        List<String> unanswered = new ArrayList<>();
        for (Client client : e.clients()) {
            Heard last = client.lastAnswer();
            boolean unresolved = s.purchasesByKey.getOrDefault(client.key, List.of()).stream().anyMatch(id -> UNRESOLVED.equals(s.stateOf(id)));
            if ((last == null || !last.isFinal()) && !unresolved) {
                unanswered.add("buyer " + client.buyer.index() + " (" + client.key + ") has no final answer after "
                               + MoneyAudit.CLIENT_BOUND.toSeconds() + " s: last " + (last == null ? "nothing" : last.describe(e.startedAt())));
                suspectBuyers.add(client);
            }
        }
        record(unanswered, "every key got a final answer", unanswered.isEmpty() ? "" : firstFew(unanswered));
    }

    /** I3 after reconciliation: charged purchases = confirmed + refunded (those waiting for an operator aside). */
    private void chargedIsConfirmedPlusRefunded() {
        long charged = s.capturesByPurchase.keySet().stream().filter(id -> !UNRESOLVED.equals(s.stateOf(id))).count();
        long confirmed = s.states.values().stream().filter("CONFIRMED"::equals).count();
        long refunded = s.states.values().stream().filter("REFUNDED"::equals).count();
        String line = "charged purchases (" + charged + ") = CONFIRMED (" + confirmed + ") + REFUNDED (" + refunded + ")";
        record(charged == confirmed + refunded ? List.of() : List.of(line.replace(" = ", " != ")), line, "");
    }

    /** A DEAD refund is money owed: the operator retried each, and each must have been sent. */
    private void deadRefunds() {
        List<String> dead = new ArrayList<>(e.operatorProblems());
        e.server().outbox("dead").path("items").forEach(item -> {
            if ("refund".equals(item.path("kind").asText())) {
                dead.add("the refund of " + item.path("purchaseId").asText() + " is still DEAD");
                suspects.add(item.path("purchaseId").asText());
            }
        });
        record(dead, e.retriedRefunds().isEmpty() && dead.isEmpty() ? "no refund went DEAD"
                     : e.retriedRefunds().size() + " DEAD refund(s) retried by the operator" + (dead.isEmpty() ? " and sent" : ""),
               dead.isEmpty() ? "" : firstFew(dead));
    }

    private void record(List<String> breaches, String rule, String detail) {
        if (!findings.check(breaches.isEmpty(), rule + (detail.isEmpty() ? "" : ": " + detail))) {
            violations.addAll(breaches);
        }
    }

    private static String firstFew(List<String> lines) {
        return String.join("; ", lines.subList(0, Math.min(5, lines.size()))) + (lines.size() > 5 ? "; and " + (lines.size() - 5) + " more" : "");
    }

    /** When the purchase was created (its first step), on the shared clock; 0 when unknown, so it counts as earlier. */
    private long createdAt(String purchaseId) {
        try {
            JsonNode timeline = e.server().purchaseView(purchaseId).path("timeline");
            return timeline.isEmpty() ? 0 : Instant.parse(timeline.get(0).path("startedAt").asText()).toEpochMilli();
        } catch (RuntimeException ex) {
            return 0;
        }
    }

    // --- the histories ---

    /** One history per buyer: a retry's purchases belong to the same story as the first one. */
    private void histories() {
        Map<Client, List<String>> byBuyer = new LinkedHashMap<>();
        List<String> strays = new ArrayList<>();
        for (String id : suspects) {
            String key = s.keyOf(id);
            e.clients().stream().filter(c -> c.key.equals(key)).findFirst()
                    .ifPresentOrElse(c -> byBuyer.computeIfAbsent(c, k -> new ArrayList<>()).add(id), () -> strays.add(id));
        }
        suspectBuyers.forEach(c -> byBuyer.putIfAbsent(c, new ArrayList<>()));
        int shown = 0;
        for (Map.Entry<Client, List<String>> entry : byBuyer.entrySet()) {
            if (shown++ == HISTORIES) {
                findings.note("(" + (byBuyer.size() - HISTORIES) + " more buyers met a broken rule; their histories are left out)");
                break;
            }
            Client client = entry.getKey();
            findings.note("history of buyer " + client.buyer.index() + ", key " + client.key + ", " + client.buyer.describeOrder()
                          + ", purchases: " + s.purchasesByKey.getOrDefault(client.key, List.of()).stream()
                                  .map(id -> id + " " + s.stateOf(id)).collect(Collectors.joining(", ")));
            findings.note("  plan: " + client.buyer.describePlan());
            findings.note("  its client heard: " + heardBy(client));
            globalFaultsMet(client).forEach(line -> findings.note("  " + line));
            entry.getValue().forEach(this::purchaseHistory);
        }
        strays.forEach(this::purchaseHistory);
    }

    /** One purchase: its timeline, the provider calls about it, and what the ledger holds for it. */
    private void purchaseHistory(String id) {
        findings.note("  purchase " + id + " (" + s.stateOf(id) + ", key " + s.keyOf(id) + ")");
        try {
            List<String> steps = new ArrayList<>();
            e.server().purchaseView(id).path("timeline").forEach(step -> steps.add(
                    at(step.path("startedAt").asText()) + " " + step.path("step").asText() + " → " + step.path("outcome").asText("(open)")));
            findings.note("    timeline: " + String.join("; ", steps));
        } catch (RuntimeException ex) {
            findings.note("    timeline: unavailable (" + ex.getMessage() + ")");
        }
        List<Served> served = s.journal.stream().filter(call -> call.concerns(id)).sorted(Comparator.comparingLong(Served::at)).toList();
        // A reconciler asking the same question every second is one line, not sixty.
        List<String> calls = new ArrayList<>();
        for (int i = 0; i < served.size(); ) {
            int j = i;
            while (j + 1 < served.size() && served.get(j + 1).sameAs(served.get(i), e.stubLabels())) {
                j++;
            }
            calls.add(served.get(i).describe(e.startedAt(), e.stubLabels()) + (j > i ? " ×" + (j - i + 1) + " until " + relative(served.get(j).at()) : ""));
            i = j + 1;
        }
        findings.note("    provider calls: " + (calls.isEmpty() ? "none" : String.join("; ", calls)));
        findings.note("    ledger: " + s.ledgerOf(id));
    }

    /** What the client heard, with a run of equal answers (a 202 polled for seconds) folded into one. */
    private String heardBy(Client client) {
        List<String> runs = new ArrayList<>();
        List<Heard> heard = List.copyOf(client.heard);
        for (int i = 0; i < heard.size(); ) {
            int j = i;
            while (j + 1 < heard.size() && heard.get(j + 1).sameAs(heard.get(i))) {
                j++;
            }
            runs.add(heard.get(i).describe(e.startedAt()) + (j > i ? " ×" + (j - i + 1) + " until " + relative(heard.get(j).at()) : ""));
            i = j + 1;
        }
        return runs.isEmpty() ? "nothing" : String.join("; ", runs);
    }

    /** The kills and unreachable windows that fell while this client was asking: faults of everybody it may have met. */
    private List<String> globalFaultsMet(Client client) {
        long from = client.startedAt;
        long to = client.heard.isEmpty() ? from : client.heard.getLast().at();
        List<String> lines = new ArrayList<>();
        e.kills().stream().filter(t -> t >= from && t <= to).forEach(t -> lines.add("kill -9 at " + relative(t)));
        e.windows().stream().filter(w -> w.endedAt() >= from && w.startedAt() <= to)
                .forEach(w -> lines.add("outside services unreachable " + relative(w.startedAt()) + "–" + relative(w.endedAt()) + " (" + w.why() + ")"));
        return lines.isEmpty() ? List.of() : List.of("while it was asking: " + String.join("; ", lines));
    }

    private String at(String iso) {
        try {
            return relative(Instant.parse(iso).toEpochMilli());
        } catch (RuntimeException ex) {
            return iso;
        }
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
                   && java.util.Objects.equals(labels.get(stubId), labels.get(other.stubId));
        }

        boolean concerns(String purchaseId) {
            return url.contains(purchaseId) || body.contains(purchaseId) || key.contains(purchaseId);
        }

        String describe(long start, Map<String, String> labels) {
            String label = labels.get(stubId);
            return relative(at, start) + " " + method + " " + url + " → " + outcome + (label == null ? "" : " [" + label + "]");
        }
    }

    /** The ledger, the journal and the database, read once. */
    private static final class Snapshot {
        final List<JsonNode> captures = new ArrayList<>();
        final List<JsonNode> payments = new ArrayList<>();
        final List<JsonNode> refunds = new ArrayList<>();
        final Map<String, List<JsonNode>> capturesByPurchase = new LinkedHashMap<>();
        final Map<String, String> states = new LinkedHashMap<>();
        final Map<String, String> paymentIds = new HashMap<>();
        final Map<String, String> keys = new HashMap<>();
        final Map<String, List<String>> purchasesByKey = new HashMap<>();
        final Map<String, List<String>> invariantViolations = new LinkedHashMap<>();
        final Map<String, Set<String>> paymentKeysByPurchase = new HashMap<>();
        List<Served> journal = List.of();
        int paymentCalls;

        /** {@code withJournal}: also what WireMock served (large; the verdict needs it, a poll does not). */
        static Snapshot take(Target server, Target stubs, List<String> events, boolean withJournal) {
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
                    s.states.put(id, purchase.path("state").asText());
                    s.keys.put(id, purchase.path("idempotencyKey").asText());
                    if (purchase.hasNonNull("paymentId")) {
                        s.paymentIds.put(id, purchase.path("paymentId").asText());
                    }
                    s.purchasesByKey.computeIfAbsent(purchase.path("idempotencyKey").asText(), k -> new ArrayList<>()).add(id);
                }
            }
            JsonNode ledger = stubs.ledger();
            ledger.path("payments").forEach(s.payments::add);
            // A ledger that lists its captures says so; an older one recorded captures only.
            (ledger.has("captures") ? ledger.path("captures") : ledger.path("payments")).forEach(capture -> {
                if ("captured".equals(capture.path("status").asText("captured"))) {
                    s.captures.add(capture);
                    s.capturesByPurchase.computeIfAbsent(capture.path("purchaseId").asText(), k -> new ArrayList<>()).add(capture);
                }
            });
            ledger.path("refunds").forEach(s.refunds::add);
            if (!withJournal) {
                return s;
            }
            for (JsonNode call : stubs.journal("POST", Faults.PAYMENTS)) {
                String purchaseId = purchaseIdOf(call.path("body").asText());
                if (!s.states.containsKey(purchaseId)) {
                    continue; // a warm-up purchase, not the campaign's
                }
                s.paymentKeysByPurchase.computeIfAbsent(purchaseId, k -> new TreeSet<>())
                        .add(call.path("headers").path("Idempotency-Key").asText("(none)"));
                s.paymentCalls++;
            }
            s.journal = journal(stubs);
            return s;
        }

        String stateOf(String id) {
            return states.getOrDefault(id, "(not in the database)");
        }

        String keyOf(String id) {
            return keys.getOrDefault(id, "?");
        }

        /** The refunds the provider recorded for this capture (by payment id, or by purchase for a ledger without it). */
        List<JsonNode> refundsOf(JsonNode capture) {
            String paymentId = capture.path("id").asText();
            String purchaseId = capture.path("purchaseId").asText();
            return refunds.stream().filter(r -> r.hasNonNull("paymentId") ? paymentId.equals(r.path("paymentId").asText())
                                                : purchaseId.equals(r.path("purchaseId").asText())).toList();
        }

        /** The Money rule, capture by capture: "purchase-id what is wrong" for each that breaks it. */
        List<String> unaccountedCaptures() {
            List<String> wrong = new ArrayList<>();
            for (JsonNode capture : captures) {
                String id = capture.path("purchaseId").asText();
                String state = stateOf(id);
                int refunded = refundsOf(capture).size();
                boolean right = "CONFIRMED".equals(state) ? refunded == 0 : refunded == 1 || UNRESOLVED.equals(state) && refunded == 0;
                if (!right) {
                    wrong.add(id + " is " + state + " but the provider captured " + capture.path("id").asText() + " ("
                              + (refunded == 0 ? "no refund" : refunded + " refunds") + ")");
                }
                String recorded = paymentIds.get(id);
                if (right && recorded != null && !recorded.equals(capture.path("id").asText())) {
                    wrong.add(id + " is " + state + " with payment " + recorded + " but the provider captured " + capture.path("id").asText());
                }
            }
            states.forEach((id, state) -> {
                if (("CONFIRMED".equals(state) || "REFUNDED".equals(state)) && !capturesByPurchase.containsKey(id)) {
                    wrong.add(id + " is " + state + " without a capture in the ledger");
                }
            });
            return wrong;
        }

        String describeStates() {
            return states.values().stream().collect(Collectors.groupingBy(s -> s, TreeMap::new, Collectors.counting()))
                    .entrySet().stream().map(e -> e.getValue() + " " + e.getKey()).collect(Collectors.joining(", "));
        }

        String ledgerOf(String id) {
            List<String> lines = new ArrayList<>();
            payments.stream().filter(p -> id.equals(p.path("purchaseId").asText()))
                    .forEach(p -> lines.add(p.path("status").asText() + " " + p.path("id").asText() + " (" + p.path("idempotencyKey").asText() + ")"));
            for (JsonNode capture : capturesByPurchase.getOrDefault(id, List.of())) {
                String line = "captured " + capture.path("id").asText() + " (" + capture.path("idempotencyKey").asText() + ")";
                if (!lines.contains(line)) {
                    lines.add(line);
                }
                refundsOf(capture).forEach(r -> lines.add("refund " + r.path("id").asText() + " (" + r.path("idempotencyKey").asText() + ")"));
            }
            return lines.isEmpty() ? "nothing recorded" : String.join("; ", lines);
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
