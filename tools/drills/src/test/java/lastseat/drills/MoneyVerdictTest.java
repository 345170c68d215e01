package lastseat.drills;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import lastseat.drills.MoneyAudit.Client;
import lastseat.drills.MoneyAudit.Heard;
import lastseat.drills.MoneyVerdict.Purchase;
import lastseat.drills.MoneyVerdict.Served;
import lastseat.drills.MoneyVerdict.Snapshot;
import lastseat.drills.MoneyVerdict.Step;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The money audit's judge on a history written by hand, no server: twenty buyers, each with a
 * purchase captured and confirmed, except that one buyer's charge was captured, its connection
 * reset, the retry refused with a 401, and the buyer told 503 "nothing was charged" while the
 * purchase was released. The verdict must fail on the ledger, print the seed, and print that
 * buyer's history alone — its requests and answers, its purchase's timeline, the provider calls
 * with the fault each met, the ledger's capture, and the kill and window that fell among them — in
 * time order, and nothing of the other buyers, the other kill or the other window.
 */
class MoneyVerdictTest {
    private static final long SEED = 42;
    private static final int BUYERS = 20;
    private static final int GUILTY = 7;
    private static final long T0 = 1_800_000_000_000L;

    private final MoneyPlan plan = MoneyPlan.draw(SEED, BUYERS, null);
    private final List<Client> clients = new ArrayList<>();
    private final Snapshot snapshot = new Snapshot();
    private final Map<String, String> labels = new HashMap<>();
    private final List<Served> journal = new ArrayList<>();

    @Test
    void aFailingVerdictPrintsTheSeedAndOnlyTheHistoryOfTheBuyerWhoseCaptureWasDenied() {
        IntStream.range(0, BUYERS).forEach(this::confirmedBuyer);
        guiltyBuyer();
        snapshot.journal = journal;
        // A kill and a window among the guilty buyer's events, and one of each long before it.
        List<MoneyVerdict.Kill> kills = List.of(new MoneyVerdict.Kill(at(GUILTY, 150), at(GUILTY, 2_000)),
                                                new MoneyVerdict.Kill(at(0, -5_000), at(0, -3_000)));
        List<FaultProxy.Window> windows = List.of(
                new FaultProxy.Window(at(GUILTY, 40), at(GUILTY, 260), "after a reset", FaultProxy.Door.TIMED_OUT),
                new FaultProxy.Window(at(0, -9_000), at(0, -8_000), "scheduled at arrival 0", FaultProxy.Door.REFUSED));
        Map<String, String> atBound = new LinkedHashMap<>();
        snapshot.purchases.values().forEach(p -> atBound.put(p.id(), p.state()));
        MoneyVerdict.Evidence evidence = new MoneyVerdict.Evidence(
                plan, T0, clients, List.of("ev-1"), labels, windows, kills,
                new MoneyVerdict.AtBound(at(BUYERS, 0), "the last purchase started", Duration.ofSeconds(14), "by hand",
                                         at(BUYERS, 14_000), atBound),
                new MoneyVerdict.Quiet(at(BUYERS, 15_000), true, Duration.ofSeconds(60)), List.of(), List.of());
        Findings findings = new Findings();

        MoneyVerdict verdict = MoneyVerdict.judge(evidence, snapshot, findings);

        List<String> lines = findings.lines();
        String all = String.join("\n", lines);
        assertThat(findings.ok()).as(all).isFalse();
        assertThat(verdict.violations()).as(all).isNotEmpty()
                .allSatisfy(v -> assertThat(v).contains(id(GUILTY)))
                .anySatisfy(v -> assertThat(v).contains("is RELEASED but the provider captured pay_" + GUILTY))
                .anySatisfy(v -> assertThat(v).contains("was answered 503 payment-unavailable"));
        assertThat(lines).as(all).anySatisfy(line -> assertThat(line).contains("FAILED with seed " + SEED)
                .contains("bin/drill money-audit --seed " + SEED + " --purchases " + BUYERS));
        assertThat(verdict.captures()).isEqualTo(BUYERS);

        List<String> history = lines.subList(indexOf(lines, "history 1: "), lines.size());
        String shown = String.join("\n", history);
        assertThat(history.stream().filter(line -> line.contains("history ")).count())
                .as("the breaches about one purchase and its buyer share one history:\n" + shown).isEqualTo(1);
        assertThat(shown).as(shown)
                .contains("buyer " + GUILTY + " (key " + clients.get(GUILTY).key + ") POST /purchases → 503 payment-unavailable")
                .contains(id(GUILTY) + " reserve → ok", id(GUILTY) + " release → released: the provider refused")
                .contains("reset [call 1: reset after capture]", "401 [call 2: 4xx]")
                .contains("ledger: lastseat-payment-" + id(GUILTY) + " captured as pay_" + GUILTY)
                .contains("kill -9 of the server", "outside services unreachable until", "connections time out");
        for (int other = 0; other < BUYERS; other++) {
            if (other != GUILTY) {
                assertThat(shown).as("nothing of buyer " + other).doesNotContain(id(other), clients.get(other).key, "pay_" + other + " ");
            }
        }
        assertThat(shown).as("nothing of the kill and the window long before").doesNotContain("scheduled at arrival 0")
                .doesNotContain(MoneyVerdict.relative(at(0, -3_000), T0));
        List<Double> times = history.subList(1, history.size()).stream()
                .map(line -> Double.parseDouble(line.trim().substring(1, line.trim().indexOf('s')))).toList();
        assertThat(times).as("in time order:\n" + shown).isSorted().hasSizeGreaterThanOrEqualTo(8);
    }

    // --- the history, written by hand ---

    /** Buyer {@code i}: arrives at its slot, its charge captured at once, confirmed, told 201. */
    private void confirmedBuyer(int i) {
        Client client = new Client(plan.buyers.get(i), SEED, "ev-1");
        clients.add(client);
        String id = id(i);
        snapshot.purchases.put(id, new Purchase(id, "ev-1", "CONFIRMED", client.key, "pay_" + i));
        snapshot.timelines.put(id, List.of(new Step("reserve", at(i, 10), "ok"), new Step("payment", at(i, 30), "ok"),
                                           new Step("confirm", at(i, 60), "ok")));
        journal.add(charge(i, 30, "201", null));
        JsonNode capture = payment(i, at(i, 31));
        snapshot.payments.add(capture);
        snapshot.captures.add(capture);
        client.heard.add(new Heard(at(i, 0), at(i, 70), 201, "", "CONFIRMED", id, 0, null));
    }

    /**
     * Buyer {@link #GUILTY}: captured and reset, the retry refused with a 401 (in a window that
     * makes connections time out, across a kill), the purchase released and the buyer told 503.
     */
    private void guiltyBuyer() {
        Client client = clients.get(GUILTY);
        String id = id(GUILTY);
        snapshot.purchases.put(id, new Purchase(id, "ev-1", "RELEASED", client.key, null));
        snapshot.timelines.put(id, List.of(new Step("reserve", at(GUILTY, 10), "ok"), new Step("payment", at(GUILTY, 30), "failed"),
                                           new Step("release", at(GUILTY, 300), "released: the provider refused the payment")));
        journal.removeIf(call -> call.body().contains(id));
        journal.add(charge(GUILTY, 30, "reset", "call 1: reset after capture"));
        journal.add(charge(GUILTY, 80, "401", "call 2: 4xx"));
        client.heard.clear();
        client.heard.add(new Heard(at(GUILTY, 0), at(GUILTY, 310), 503, "payment-unavailable", "", null, 1000, null));
        client.heard.add(new Heard(at(GUILTY, 1_400), at(GUILTY, 1_400), 0, "", "", null, 0, "java.net.ConnectException"));
        client.heard.add(new Heard(at(GUILTY, 2_500), at(GUILTY, 2_600), 200, "", "RELEASED", id, 0, null));
    }

    private Served charge(int buyer, long offset, String outcome, String label) {
        String stub = "stub-" + buyer + "-" + offset;
        if (label != null) {
            labels.put(stub, label);
        }
        return new Served(at(buyer, offset), "POST", "/payments", "{\"purchaseId\":\"" + id(buyer) + "\"}",
                          "lastseat-payment-" + id(buyer), outcome, stub);
    }

    private static JsonNode payment(int buyer, long processedAt) {
        ObjectNode payment = Target.object().put("id", "pay_" + buyer).put("idempotencyKey", "lastseat-payment-" + id(buyer))
                .put("purchaseId", id(buyer)).put("status", "captured");
        payment.put("processedAt", processedAt);
        return payment;
    }

    /** Purchase ids no other id contains. */
    private static String id(int buyer) {
        return String.format("pur%02d-x", buyer);
    }

    /** {@code offset} ms after buyer {@code buyer}'s arrival; one arrival every 3 s. */
    private static long at(int buyer, long offset) {
        return T0 + 10_000 + buyer * 3_000L + offset;
    }

    private static int indexOf(List<String> lines, String start) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).trim().startsWith(start)) {
                return i;
            }
        }
        throw new AssertionError("no line starts with \"" + start + "\" in\n" + String.join("\n", lines));
    }
}
