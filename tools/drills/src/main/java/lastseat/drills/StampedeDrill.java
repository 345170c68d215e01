package lastseat.drills;

import java.util.List;
import java.util.Map;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;

/**
 * The stampede: many buyers released together at one seat. Unsafe (the service's claim with its guard
 * taken out) must show the double booking, or the run proves nothing; safe (the service's own
 * reservation) must show none under the same race — both on the drill's own database, see
 * {@link Stampede}; and the real {@code POST /purchases} of the target must sell the seat once.
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
            Stampede.Report unsafe = mode(Stampede.Mode.UNSAFE, buyers, findings);
            findings.check(unsafe.doubleCount() >= 1,
                           "unsafe: the race happened: " + unsafe.confirmed() + " of " + buyers
                           + " were told \"confirmed\" for one seat (doubleCount " + unsafe.doubleCount() + ")");
        }
        if (only == null || only.equals("safe")) {
            Stampede.Report safe = mode(Stampede.Mode.SAFE, buyers, findings);
            findings.check(safe.doubleCount() == 0 && safe.confirmed() == 1,
                           "safe: the same race sold the seat once: " + safe.confirmed() + " confirmed, doubleCount " + safe.doubleCount());
        }
        if (only == null) {
            realPath(target, buyers, findings);
        }
    }

    /** One arm of the stampede, on the drill's own database (see {@link Stampede}). */
    private static Stampede.Report mode(Stampede.Mode mode, int buyers, Findings findings) {
        String name = mode.name().toLowerCase(java.util.Locale.ROOT);
        Stampede.Report report;
        try {
            report = Stampede.run(mode, buyers, 1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted during the " + name + " stampede", e);
        }
        report.perSeat().forEach((seat, who) -> {
            List<String> yes = who.toldYes();
            findings.note(name + ": " + seat + " owned by " + who.owner() + "; told yes: "
                          + (yes.size() <= 6 ? String.join(", ", yes) : String.join(", ", yes.subList(0, 5)) + ", ... (" + yes.size() + ")"));
        });
        report.answers().stream().filter(a -> !a.confirmed()).findFirst()
              .ifPresent(a -> {
                  findings.figure(name + "Refusal", a.message());
                  findings.note(name + ": a refused buyer was told \"" + a.message() + "\"");
              });
        findings.figure(name, Map.of("buyers", buyers, "confirmed", report.confirmed(), "doubleCount", report.doubleCount()));
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
