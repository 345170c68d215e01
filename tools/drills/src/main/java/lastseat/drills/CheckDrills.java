package lastseat.drills;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import lastseat.testkit.Answer;
import lastseat.testkit.Timelines;

/**
 * Faults in the fraud and tax checks (step 2). Under each, the purchase must end within the
 * deadline plus slack, the check still running must be cancelled (its timeline step says
 * "cancelled" and the answer comes before its stub would have answered), no payment call may be
 * made, and the seat must come back.
 */
final class CheckDrills {
    private CheckDrills() {
    }

    static List<Drill> all() {
        return List.of(
                new Drill("fraud-timeout", "fraud answers after 5 s (tax after 1 s, so both run at the deadline)",
                      "504 within deadline + slack; fraud and tax cancelled; no payment call; seat back",
                      CheckDrills::fraudTimeout),
                new Drill("tax-failure", "tax answers 500 after 100 ms (fraud takes 2 s)",
                      "fraud cancelled at once; clean 503 naming tax; no payment call; seat back",
                      (t, s, f) -> failingCheck(t, s, f, Faults.status(Faults.TAX, 500), "tax", Faults.FRAUD, "fraud")),
                new Drill("check-reset", "fraud resets the connection after 100 ms (tax takes 2 s)",
                      "tax cancelled at once; clean 503 naming fraud; no payment call; seat back",
                      (t, s, f) -> failingCheck(t, s, f, Faults.fault(Faults.FRAUD, "CONNECTION_RESET_BY_PEER"), "fraud",
                                                Faults.TAX, "tax")),
                new Drill("garbage-checks", "tax answers a malformed chunk, random bytes, nothing",
                      "a clean 503 problem for each; no payment call; seat back",
                      CheckDrills::garbage),
                new Drill("long-tail", "fraud and tax delays lognormal, median 300 ms, sigma 0.5",
                      "deadline misses close to the share of checks slower than the deadline; every answer in time; I1-I4",
                      CheckDrills::longTail));
    }

    private static void fraudTimeout(Target target, Settings settings, Findings findings) {
        String event = target.newEvent(1);
        target.stub(Faults.slowCheck(Faults.FRAUD, 5000));
        target.stub(Faults.slowCheck(Faults.TAX, 1000));

        Answer answer = target.buyOne(event);

        findings.check(answer.status() == 504 && answer.type().equals("deadline-passed"),
                       "answered 504 deadline-passed (got " + answer.status() + " " + answer.type() + ")");
        inTime(answer, settings, findings);
        Map<String, String> steps = onlyPurchaseSteps(target, event);
        findings.check("cancelled".equals(steps.get("fraud")) && "cancelled".equals(steps.get("tax")),
                       "fraud and tax were cancelled at the deadline (timeline: fraud " + steps.get("fraud") + ", tax " + steps.get("tax") + ")");
        seatBackWithoutPayment(target, event, findings);
    }

    private static void failingCheck(Target target, Settings settings, Findings findings, String fault, String failing,
                                     String slowPath, String slow) {
        String event = target.newEvent(1);
        // The failure comes 100 ms in, so the other check's call is surely under way when it is cancelled.
        target.stub(Faults.after(100, fault));
        target.stub(Faults.slowCheck(slowPath, 2000));

        Answer answer = target.buyOne(event);

        String service = answer.body().startsWith("{") ? answer.json().path("service").asText() : "";
        findings.check(answer.status() == 503 && answer.type().equals("check-unavailable") && service.equals(failing),
                       "answered 503 check-unavailable naming " + failing + " (got " + answer.status() + " " + answer.type()
                       + " " + service + ")");
        findings.check(answer.header("Retry-After") != null, "with Retry-After: " + answer.header("Retry-After"));
        findings.check(answer.serverMillis() < settings.deadline().toMillis(),
                       "answered in " + answer.serverMillis() + " ms, before the deadline: the 2 s " + slow + " call was stopped, not awaited");
        findings.figure("answerMillis", answer.serverMillis());
        Map<String, String> steps = onlyPurchaseSteps(target, event);
        findings.check("cancelled".equals(steps.get(slow)), slow + " was cancelled (timeline: " + steps + ")");
        seatBackWithoutPayment(target, event, findings);
    }

    private static void garbage(Target target, Settings settings, Findings findings) {
        String event = target.newEvent(1);
        for (String fault : List.of("MALFORMED_RESPONSE_CHUNK", "RANDOM_DATA_THEN_CLOSE", "EMPTY_RESPONSE")) {
            target.stub(Faults.fault(Faults.TAX, fault));

            Answer answer = target.buyOne(event);

            findings.check(answer.status() == 503 && "application/problem+json".equals(answer.header("Content-Type")),
                           fault + ": a clean 503 problem (" + answer.status() + " " + answer.type() + ", "
                           + answer.serverMillis() + " ms)");
            findings.check(target.invariants(event).path("held").asInt() == 0, fault + ": the seat is back");
        }
        seatBackWithoutPayment(target, event, findings);
    }

    /**
     * Many purchases whose checks take a lognormal time. A purchase misses when the slower of its
     * two checks, plus the rest of its path, passes the deadline; the expected share is computed
     * for the whole deadline and for the deadline less 100 ms (the rest of the path, generously),
     * and the observed share must lie in that band widened by three standard errors.
     */
    private static void longTail(Target target, Settings settings, Findings findings) {
        int n = settings.longTailPurchases();
        int median = 300;
        double sigma = 0.5;
        String event = target.newEvent(n);
        target.stub(Faults.lognormalCheck(Faults.FRAUD, median, sigma));
        target.stub(Faults.lognormalCheck(Faults.TAX, median, sigma));
        target.warmConnections(settings.longTailConcurrency());

        List<Answer> answers = Target.atMost(settings.longTailConcurrency(), n, i -> target.buyOne(event));

        long misses = answers.stream().filter(a -> a.status() != 201).count();
        double observed = (double) misses / n;
        // The checks must end before the work does (the deadline less the answer's reserve), and the rest of the path before that.
        long workEnds = settings.workTime().toMillis();
        double low = slowerOfTwoOver(workEnds, median, sigma);
        double high = slowerOfTwoOver(workEnds - 100, median, sigma);
        double tolerance = 3 * Math.sqrt(high * (1 - high) / n) + 1.0 / n;
        findings.note(n + " purchases, " + settings.longTailConcurrency() + " at a time: " + Target.describe(answers));
        findings.check(observed >= low - tolerance && observed <= high + tolerance,
                       String.format("deadline misses %.1f%% (%d of %d); expected %.1f%%-%.1f%% (+/- %.1f%%)",
                                     observed * 100, misses, n, low * 100, high * 100, tolerance * 100));
        findings.check(answers.stream().allMatch(a -> List.of(201, 202, 503, 504).contains(a.status())),
                       "every answer is 201, 202, 503 or 504");
        long slowest = slowest(target, answers, settings, findings);
        JsonNode db = findings.invariantsHold(target, event);
        long confirmed = answers.stream().filter(a -> a.status() == 201).count();
        long pending = answers.stream().filter(a -> a.status() == 202).count();
        findings.check(db.path("sold").asLong() == confirmed && db.path("held").asLong() == pending,
                       "sold " + db.path("sold").asInt() + " = 201 answers, held " + db.path("held").asInt()
                       + " = 202 answers (payment still open)");
        findings.figure("purchases", n);
        findings.figure("misses", misses);
        findings.figure("missRate", Math.round(observed * 1000) / 1000.0);
        findings.figure("expectedLow", Math.round(low * 1000) / 1000.0);
        findings.figure("expectedHigh", Math.round(high * 1000) / 1000.0);
        findings.figure("slowestMillis", slowest);
    }

    /** P(max(X, Y) > t) for X, Y independent lognormal with the given median and sigma. */
    static double slowerOfTwoOver(double t, double median, double sigma) {
        double below = normalCdf(Math.log(t / median) / sigma);
        return 1 - below * below;
    }

    /** The standard normal CDF (Abramowitz and Stegun 26.2.17, error below 7.5e-8). */
    static double normalCdf(double z) {
        double t = 1 / (1 + 0.2316419 * Math.abs(z));
        double poly = t * (0.319381530 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
        double tail = Math.exp(-z * z / 2) / Math.sqrt(2 * Math.PI) * poly;
        return z >= 0 ? 1 - tail : tail;
    }

    static void inTime(Answer answer, Settings settings, Findings findings) {
        findings.check(answer.serverMillis() <= settings.answerBoundMillis(),
                       "answered in " + answer.serverMillis() + " ms (" + answer.elapsedMillis() + " ms at the drill) <= deadline + slack "
                       + settings.answerBoundMillis() + " ms (I5)");
        findings.figure("answerMillis", answer.serverMillis());
    }

    /** I5 for a crowd: the slowest answer on the server's clock; the drill's view is reported beside it. */
    static long slowest(Target target, List<Answer> answers, Settings settings, Findings findings) {
        Answer slowest = answers.stream().max(Comparator.comparingLong(Answer::serverMillis)).orElseThrow();
        long server = slowest.serverMillis();
        long client = answers.stream().mapToLong(Answer::elapsedMillis).max().orElse(0);
        boolean inTime = server <= settings.answerBoundMillis();
        findings.check(inTime, "slowest answer " + server + " ms on the server (" + client
                       + " ms at the drill) <= deadline + slack " + settings.answerBoundMillis() + " ms (I5)");
        if (!inTime) {
            findings.note("the slowest: " + whatTookLong(target, slowest));
        }
        return server;
    }

    /** An answer's status and kind, and for a purchase its steps: when each started after the first and how long it took. */
    static String whatTookLong(Target target, Answer answer) {
        String id = answer.body().startsWith("{") ? answer.json().path("id").asText("") : "";
        String what = answer.status() + (answer.type().isEmpty() ? "" : " " + answer.type());
        if (id.isEmpty()) {
            return what;
        }
        return what + ", purchase " + id + ":" + Timelines.describe(target.purchaseView(id).path("timeline"));
    }

    /** The steps of the event's only purchase, by name, with their outcomes. */
    static Map<String, String> onlyPurchaseSteps(Target target, String event) {
        JsonNode purchases = target.invariants(event).path("purchases");
        Map<String, String> steps = new HashMap<>();
        if (purchases.size() == 1) {
            target.purchaseView(purchases.get(0).path("id").asText()).path("timeline")
                    .forEach(step -> steps.put(step.path("step").asText(), step.path("outcome").asText()));
        }
        return steps;
    }

    private static void seatBackWithoutPayment(Target target, String event, Findings findings) {
        int calls = target.paymentCalls(event).size();
        findings.check(calls == 0, "no payment call (" + calls + ")");
        JsonNode db = findings.invariantsHold(target, event);
        findings.check(db.path("available").asInt() == db.path("capacity").asInt(),
                       "the seat is back: " + db.path("available").asInt() + " of " + db.path("capacity").asInt() + " available");
    }
}
