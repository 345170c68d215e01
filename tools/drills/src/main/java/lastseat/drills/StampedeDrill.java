package lastseat.drills;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;

/**
 * The stampede: many buyers released together at one seat. Unsafe must show the double booking
 * (or the run proves nothing), safe must show none, and the real {@code POST /purchases} must sell
 * the seat once.
 */
final class StampedeDrill {
    private StampedeDrill() {
    }

    static Drill drill() {
        return new Drill("stampede", "none: buyers released together at one seat",
                         "unsafe shows the double booking; safe and the real purchase path sell the seat once",
                         StampedeDrill::run);
    }

    private static void run(Target target, Settings settings, Findings findings) {
        String only = settings.stampedeMode();
        int buyers = settings.stampedeBuyers();
        if (only == null || only.equals("unsafe")) {
            JsonNode unsafe = mode(target, "unsafe", buyers, findings);
            findings.check(unsafe.path("doubleCount").asInt() >= 1,
                           "unsafe: the race happened: " + unsafe.path("confirmed").asInt() + " of " + buyers
                           + " were told \"confirmed\" for one seat (doubleCount " + unsafe.path("doubleCount").asInt() + ")");
        }
        if (only == null || only.equals("safe")) {
            JsonNode safe = mode(target, "safe", buyers, findings);
            findings.check(safe.path("doubleCount").asInt() == 0 && safe.path("confirmed").asInt() == 1,
                           "safe: the same race sold the seat once: " + safe.path("confirmed").asInt()
                           + " confirmed, doubleCount " + safe.path("doubleCount").asInt());
        }
        if (only == null) {
            realPath(target, buyers, findings);
        }
    }

    private static JsonNode mode(Target target, String mode, int buyers, Findings findings) {
        Answer answer = target.stampede(mode, buyers, 1);
        if (answer.status() != 200) {
            throw new IllegalStateException("POST /drills/stampede answered " + answer.status() + ": " + answer.body());
        }
        JsonNode report = answer.json();
        for (Map.Entry<String, JsonNode> seat : report.path("perSeat").properties()) {
            List<String> yes = new ArrayList<>();
            seat.getValue().path("toldYes").forEach(n -> yes.add(n.asText()));
            findings.note(mode + ": " + seat.getKey() + " owned by " + seat.getValue().path("owner").asText() + "; told yes: "
                          + (yes.size() <= 6 ? String.join(", ", yes) : String.join(", ", yes.subList(0, 5)) + ", ... (" + yes.size() + ")"));
        }
        report.path("answers").forEach(a -> {
            if (!a.path("confirmed").asBoolean() && findings.figures().get(mode + "Refusal") == null) {
                findings.figure(mode + "Refusal", a.path("message").asText());
            }
        });
        findings.figure(mode, Map.of("buyers", buyers, "confirmed", report.path("confirmed").asInt(),
                                     "doubleCount", report.path("doubleCount").asInt()));
        if (findings.figures().get(mode + "Refusal") != null) {
            findings.note(mode + ": a refused buyer was told \"" + findings.figures().get(mode + "Refusal") + "\"");
        }
        return report;
    }

    private static void realPath(Target target, int buyers, Findings findings) {
        String event = target.newEvent("A1");
        target.warmConnections(Math.min(buyers, 100));

        List<Answer> answers = Target.together(buyers, i -> target.purchase(java.util.UUID.randomUUID().toString(),
                                                                                    LastseatClient.buyerBody(event, "buyer-" + (i + 1), "tok_ok", "A1")));

        long confirmed = answers.stream().filter(a -> a.status() == 201).count();
        long late = answers.stream().filter(a -> a.status() == 504).count();
        long taken = answers.stream().filter(a -> a.status() == 409 && a.json().path("detail").asText().equals("A1 is already taken")).count();
        long shed = answers.stream().filter(a -> a.status() == 503).count();
        findings.note("POST /purchases: " + Target.describe(answers));
        // Exactly one buyer wins the claim. On a starved machine the winner may still run out of time
        // (504, or 503 when too little was left to call the provider): then the seat is back, unsold.
        boolean seatBack = confirmed == 0 && target.invariants(event).path("available").asInt() == 1;
        findings.check(confirmed <= 1 && (confirmed == 1 || seatBack) && confirmed + late + taken + shed == buyers,
                       "POST /purchases, the real path, " + buyers + " buyers at once: "
                       + (confirmed == 1 ? "one 201" : "the winner ran out of time and the seat is back") + "; the others 409 \"A1 is already taken\""
                       + (shed > 0 ? " or 503 (" + shed + " shed by overload or out of time, nothing kept)" : ""));
        findings.invariantsHold(target, event);
        findings.figure("real", Map.of("buyers", buyers, "confirmed", confirmed));
    }
}
