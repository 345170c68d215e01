package lastseat.drills;

import com.fasterxml.jackson.databind.JsonNode;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;

/**
 * Faults at the payment provider (step 3). The bulkhead must bound the calls, a lost answer must
 * keep the hold as PAYMENT_UNKNOWN rather than guess, and asking again must carry the same key so
 * the provider charges once.
 */
final class PaymentDrills {
    private PaymentDrills() {
    }

    static List<Drill> all() {
        return List.of(
                new Drill("bulkhead-saturation", "payment answers after 2 s; 60 buyers at once",
                          "<= 20 concurrent payment calls; the rest 503 + Retry-After within the deadline; no hold leaked",
                          PaymentDrills::bulkheadSaturation),
                new Drill("payment-timeout", "payment answers after the deadline (deadline + 700 ms)",
                          "202 PAYMENT_UNKNOWN; hold kept; exactly one payment call, also after a retry with the same key",
                          PaymentDrills::paymentTimeout),
                new Drill("payment-reset-then-ok", "the provider captures, then resets the connection; asked again it answers",
                          "one confirmation; every provider call carries the one key; a retry with the client's key is replayed",
                          PaymentDrills::resetThenOk));
    }

    private static void bulkheadSaturation(Target target, Settings settings, Findings findings) {
        int buyers = settings.burst();
        int permits = target.freePaymentPermits();
        String event = target.newEvent(buyers);
        String slow = target.stub(Faults.slowPayment(2000));
        target.warmConnections(buyers);

        List<Answer> answers = Target.together(buyers, i -> target.buyOne(event));
        // The provider is quick again, so that the reconciler settles the unknown payments (it may send one
        // again, taking a permit for that call) before the permits are counted.
        target.unstub(slow);

        findings.note(buyers + " buyers at once, " + permits + " permits: " + Target.describe(answers));
        List<Instant[]> calls = paymentCalls(target, event);
        int ours = mostAtOnce(calls);
        findings.check(ours >= 1 && ours <= permits, "lastseat had at most " + ours + " payment calls open at once (<= "
                                                     + permits + "), by the purchases' timelines");
        int seen = target.ledger().path("maxPaymentsInFlight").asInt();
        int abandoned = (int) answers.stream().filter(a -> a.status() == 202).count();
        findings.check(seen <= permits + abandoned, "the provider saw at most " + seen + " at once"
                       + (seen > permits ? ": calls lastseat gave up at the deadline keep the provider busy after their permit is back" : ""));
        List<Answer> pending = answers.stream().filter(a -> a.status() == 202).toList();
        List<Answer> refused = answers.stream().filter(a -> a.status() != 202).toList();
        findings.note(pending.size() + " buyers got a permit and were answered 202 at the deadline (payment unknown)"
                      + (pending.size() > permits ? "; the later ones took the permits the first gave back" : ""));
        findings.check(!refused.isEmpty() && refused.stream().allMatch(a -> a.status() == 503 && a.header("Retry-After") != null
                                                                         || a.status() == 504),
                       "the other " + refused.size() + " were refused with 503 + Retry-After (or 504 if the deadline came first)");
        long slowest = CheckDrills.slowest(target, answers, settings, findings);
        JsonNode db = findings.invariantsHold(target, event);
        findings.check(db.path("held").asInt() + db.path("sold").asInt() == pending.size(),
                       "no hold leaked: held " + db.path("held").asInt() + " + sold " + db.path("sold").asInt() + " = the "
                       + pending.size() + " payments left open (the reconciler confirms them as it finds the captures)");
        // The reconciler may be sending an unknown charge again through the bulkhead: wait for it, bounded.
        findings.check(LifecycleDrills.await(Duration.ofSeconds(10), () -> target.freePaymentPermits() == permits),
                       "every permit back (" + permits + " free)");
        findings.figure("buyers", buyers);
        findings.figure("paymentCalls", calls.size());
        findings.figure("mostCallsOpen", ours);
        findings.figure("providerMostAtOnce", seen);
        findings.figure("pending", pending.size());
        findings.figure("refused", refused.size());
        findings.figure("slowestMillis", slowest);
    }

    /** Every payment step of the event's purchases, as [started, ended] on the server's clock. */
    private static List<Instant[]> paymentCalls(Target target, String event) {
        List<Instant[]> calls = new ArrayList<>();
        for (JsonNode purchase : target.invariants(event).path("purchases")) {
            for (JsonNode step : target.purchaseView(purchase.path("id").asText()).path("timeline")) {
                if (step.path("step").asText().equals("payment")) {
                    calls.add(new Instant[] {Instant.parse(step.path("startedAt").asText()), Instant.parse(step.path("endedAt").asText())});
                }
            }
        }
        return calls;
    }

    private record Edge(Instant at, int delta) {
    }

    /** The most intervals open at one instant; an interval ending when another starts does not overlap it. */
    static int mostAtOnce(List<Instant[]> intervals) {
        List<Edge> edges = new ArrayList<>();
        for (Instant[] interval : intervals) {
            edges.add(new Edge(interval[0], 1));
            edges.add(new Edge(interval[1], -1));
        }
        edges.sort(Comparator.comparing(Edge::at).thenComparingInt(Edge::delta));
        int open = 0;
        int most = 0;
        for (Edge edge : edges) {
            open += edge.delta();
            most = Math.max(most, open);
        }
        return most;
    }

    private static void paymentTimeout(Target target, Settings settings, Findings findings) {
        String event = target.newEvent(1);
        target.stub(Faults.slowPayment((int) settings.deadline().toMillis() + 700));
        String key = UUID.randomUUID().toString();
        String body = LastseatClient.quantityBody(event, 1, "drill");

        Answer answer = target.purchase(key, body);
        Answer retry = target.purchase(key, body);

        findings.check(answer.status() == 202 && "PAYMENT_UNKNOWN".equals(answer.json().path("state").asText()),
                       "answered 202 PAYMENT_UNKNOWN (got " + answer.status() + " " + answer.body().substring(0, Math.min(80, answer.body().length())) + ")");
        CheckDrills.inTime(answer, settings, findings);
        findings.check(retry.status() == 202 && "true".equals(retry.header("Idempotent-Replayed")),
                       "a retry with the same Idempotency-Key is answered from the first (202, Idempotent-Replayed)");
        JsonNode db = findings.invariantsHold(target, event);
        findings.check(db.path("held").asInt() == 1, "the hold is kept while the payment is unknown (held " + db.path("held").asInt() + ")");
        int calls = target.paymentCalls(event).size();
        findings.check(calls == 1, "exactly one payment call (" + calls + ")");
        int captured = target.capturesFor(event).size();
        findings.note("the provider did capture it (" + captured + " in its ledger): only asking it by the key can tell");
        findings.figure("paymentCalls", calls);
    }

    private static void resetThenOk(Target target, Settings settings, Findings findings) {
        String event = target.newEvent(1);
        for (String mapping : Faults.paymentResetThenCaptured()) {
            target.stub(mapping);
        }
        String key = UUID.randomUUID().toString();
        String body = LastseatClient.quantityBody(event, 1, "drill");

        Answer answer = target.purchase(key, body);
        Answer retry = target.purchase(key, body);

        findings.check(answer.status() == 201, "confirmed after asking the provider again (got " + answer.status() + ")");
        CheckDrills.inTime(answer, settings, findings);
        findings.check(retry.status() == 201 && "true".equals(retry.header("Idempotent-Replayed")) && retry.body().equals(answer.body()),
                       "a retry with the client's Idempotency-Key is the first answer replayed, byte for byte");
        String purchase = answer.status() == 201 ? answer.json().path("id").asText() : "?";
        List<JsonNode> calls = target.paymentCalls(event);
        Set<String> keys = calls.stream().map(c -> c.path("headers").path("Idempotency-Key").asText()).collect(Collectors.toSet());
        findings.check(calls.size() == 2 && keys.equals(Set.of(Target.paymentKey(purchase))),
                       calls.size() + " provider calls (the reset one and the answered one), all with key " + keys);
        int captures = target.capturesFor(event).size();
        findings.check(captures == 1, "the provider captured once (" + captures + ")");
        JsonNode db = findings.invariantsHold(target, event);
        findings.check(db.path("sold").asInt() == 1 && db.path("purchasesByState").path("CONFIRMED").asInt() == 1,
                       "one confirmation, one seat sold");
        findings.figure("paymentCalls", calls.size());
        findings.figure("captures", captures);
    }
}
