package lastseat.drills;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What one drill found: each check with its verdict, notes, and the figures that go into the JSON
 * line. A drill is ok when every check held.
 */
final class Findings {
    private final List<String> lines = new ArrayList<>();
    private final Map<String, Object> figures = new LinkedHashMap<>();
    private boolean ok = true;

    /** Records a check; returns whether it held. */
    boolean check(boolean holds, String what) {
        lines.add((holds ? "  ok    " : "  FAIL  ") + what);
        ok &= holds;
        return holds;
    }

    void note(String text) {
        lines.add("        " + text);
    }

    void figure(String key, Object value) {
        figures.put(key, value);
    }

    boolean ok() {
        return ok;
    }

    List<String> lines() {
        return List.copyOf(lines);
    }

    Map<String, Object> figures() {
        return figures;
    }

    /**
     * I1, I2 and I4 from the database (through {@code GET /drills/invariants}) and I3 from the
     * provider's journal and ledger, for every purchase of the event.
     */
    JsonNode invariantsHold(Target target, String eventId) {
        JsonNode db = target.invariants(eventId);
        List<String> violations = new ArrayList<>();
        db.path("violations").forEach(v -> violations.add(v.asText()));
        check(violations.isEmpty(), "I1, I2, I4 in the database: " + (violations.isEmpty()
                ? "available " + db.path("available").asInt() + " + held " + db.path("held").asInt() + " + sold "
                  + db.path("sold").asInt() + " = capacity " + db.path("capacity").asInt() + "; one ticket per sold seat; no stale hold"
                : String.join("; ", violations)));
        Map<String, Set<String>> keysByPurchase = new HashMap<>();
        Set<String> ours = new java.util.HashSet<>(db.path("purchases").findValuesAsText("id"));
        int calls = 0;
        for (JsonNode request : target.journal("POST", "/payments")) {
            String purchaseId = purchaseIdOf(request.path("body").asText());
            if (!ours.contains(purchaseId)) {
                continue;
            }
            String key = request.path("headers").path("Idempotency-Key").asText(null);
            keysByPurchase.computeIfAbsent(purchaseId, id -> new java.util.HashSet<>()).add(String.valueOf(key));
            calls++;
        }
        Map<String, Integer> captures = new HashMap<>();
        target.ledger().path("captures").forEach(p -> captures.merge(p.path("purchaseId").asText(), 1, Integer::sum));
        List<String> broken = new ArrayList<>();
        int confirmed = 0;
        for (JsonNode purchase : db.path("purchases")) {
            String id = purchase.path("id").asText();
            String state = purchase.path("state").asText();
            int charged = captures.getOrDefault(id, 0);
            boolean right = switch (state) {
                case "CONFIRMED", "REFUNDED" -> charged == 1;
                case "RELEASED", "EXPIRED" -> charged == 0;
                default -> charged <= 1;
            };
            if (!right) {
                broken.add(id + " is " + state + " with " + charged + " captures");
            }
            Set<String> keys = keysByPurchase.getOrDefault(id, Set.of());
            if (!keys.isEmpty() && !keys.equals(Set.of(Target.paymentKey(id)))) {
                broken.add(id + " was charged with keys " + keys);
            }
            confirmed += "CONFIRMED".equals(state) ? 1 : 0;
        }
        check(broken.isEmpty(), "I3: " + (broken.isEmpty()
                ? calls + " payment calls, each with its purchase's one key; " + confirmed + " confirmed, each captured once; none for released"
                : String.join("; ", broken.subList(0, Math.min(5, broken.size())))));
        return db;
    }

    private static String purchaseIdOf(String body) {
        try {
            return Target.JSON.readTree(body).path("purchaseId").asText("?");
        } catch (java.io.IOException e) {
            return "?";
        }
    }

    Report report(String drill) {
        return new Report(drill, ok, lines(), figures);
    }

    /** A drill's outcome: the human lines, and one JSON line with the verdict and the figures. */
    record Report(String drill, boolean ok, List<String> lines, Map<String, Object> figures) {
        String json() {
            ObjectNode line = Target.object();
            line.put("drill", drill);
            line.put("ok", ok);
            figures.forEach((key, value) -> line.set(key, Target.JSON.valueToTree(value)));
            return line.toString();
        }
    }
}
