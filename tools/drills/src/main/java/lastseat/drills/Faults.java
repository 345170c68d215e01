package lastseat.drills;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Map;

/**
 * WireMock stub mappings that inject one fault, in front of the file mappings (priority 1). The
 * payment ones keep the ledger transformer, so the provider still records what reached it.
 */
final class Faults {
    static final String FRAUD = "/fraud/checks";
    static final String TAX = "/tax/quotes";
    static final String PAYMENTS = "/payments";

    private Faults() {
    }

    /** The check's normal answer, {@code delayMillis} late. */
    static String slowCheck(String path, int delayMillis) {
        ObjectNode response = checkAnswer(path);
        response.put("fixedDelayMilliseconds", delayMillis);
        return mapping(path, response);
    }

    /** The check's normal answer after a lognormal delay (WireMock's delay distribution). */
    static String lognormalCheck(String path, int medianMillis, double sigma) {
        ObjectNode response = checkAnswer(path);
        response.putObject("delayDistribution").put("type", "lognormal").put("median", medianMillis).put("sigma", sigma);
        return mapping(path, response);
    }

    static String status(String path, int status) {
        ObjectNode response = Target.object().put("status", status);
        response.putObject("headers").put("Content-Type", "application/json");
        response.put("body", "{\"error\":\"injected by a drill\"}");
        return mapping(path, response);
    }

    /** A WireMock fault: CONNECTION_RESET_BY_PEER, EMPTY_RESPONSE, MALFORMED_RESPONSE_CHUNK, RANDOM_DATA_THEN_CLOSE. */
    static String fault(String path, String fault) {
        return mapping(path, Target.object().put("fault", fault));
    }

    /** The provider captures (through the ledger) and answers after a delay drawn uniformly from [lower, upper] ms. */
    static String uniformPayment(int lowerMillis, int upperMillis) {
        ObjectNode response = Target.object().put("status", 201);
        response.set("transformers", Target.array().add("ledger"));
        response.putObject("delayDistribution").put("type", "uniform").put("lower", lowerMillis).put("upper", upperMillis);
        return mapping(PAYMENTS, response);
    }

    /** The same stub, answering (or failing) {@code delayMillis} late. */
    static String after(int delayMillis, String mapping) {
        ObjectNode stub = parse(mapping);
        ((ObjectNode) stub.path("response")).put("fixedDelayMilliseconds", delayMillis);
        return stub.toString();
    }

    /** The provider captures (through the ledger) and answers {@code delayMillis} late. */
    static String slowPayment(int delayMillis) {
        return mapping(PAYMENTS, Target.object().put("status", 201).put("fixedDelayMilliseconds", delayMillis)
                .set("transformers", Target.array().add("ledger")));
    }

    /** The provider captures the first call but resets its connection; later calls are answered. */
    static String[] paymentResetThenCaptured() {
        ObjectNode reset = Target.object().put("fault", "CONNECTION_RESET_BY_PEER");
        reset.set("transformers", Target.array().add("ledger"));
        ObjectNode first = parse(mapping(PAYMENTS, reset));
        first.put("scenarioName", "payment-reset-then-ok").put("requiredScenarioState", "Started").put("newScenarioState", "reset-once");
        ObjectNode then = parse(mapping(PAYMENTS, Target.object().put("status", 201).set("transformers", Target.array().add("ledger"))));
        then.put("scenarioName", "payment-reset-then-ok").put("requiredScenarioState", "reset-once");
        return new String[] {first.toString(), then.toString()};
    }

    /**
     * The ledger's answer (the provider records what it decides), steered by its parameters:
     * {@code decide} (capture or decline) and {@code processAfterMillis} (the provider processes the
     * request that much later; until then a lookup says 404). No parameters: capture at arrival.
     */
    static ObjectNode ledgerAnswer(Map<String, Object> parameters) {
        ObjectNode response = Target.object().put("status", 201);
        response.set("transformers", Target.array().add("ledger"));
        if (!parameters.isEmpty()) {
            response.set("transformerParameters", Target.JSON.valueToTree(parameters));
        }
        return response;
    }

    /** An answer with {@code status} and a small JSON body, from WireMock alone (nothing is recorded). */
    static ObjectNode statusAnswer(int status) {
        ObjectNode response = Target.object().put("status", status);
        response.putObject("headers").put("Content-Type", "application/json");
        response.put("body", "{\"error\":\"injected by a drill\"}");
        return response;
    }

    /**
     * A payment stub for one purchase's calls only: those whose body carries {@code token} as
     * {@code "token"} (lastseat sends the buyer's paymentToken there).
     */
    static String paymentForToken(String token, ObjectNode response) {
        ObjectNode stub = parse(mapping(PAYMENTS, response));
        ((ObjectNode) stub.path("request")).set("bodyPatterns", Target.array().add(
                Target.object().put("matchesJsonPath", "$[?(@.token == '" + token + "')]")));
        return stub.toString();
    }

    /** A stub for the provider's status lookups ({@code GET /payments?idempotencyKey=}). */
    static String lookup(ObjectNode response) {
        ObjectNode stub = Target.object().put("priority", 1);
        stub.putObject("request").put("method", "GET").put("urlPath", PAYMENTS);
        stub.set("response", response);
        return stub.toString();
    }

    /**
     * The stub as one step of a WireMock scenario: it matches only while the scenario is in
     * {@code state} ("Started" at first) and moves it to {@code next} (null: it stays).
     */
    static String inScenario(String mapping, String scenario, String state, String next) {
        ObjectNode stub = parse(mapping);
        stub.put("scenarioName", scenario).put("requiredScenarioState", state);
        if (next != null) {
            stub.put("newScenarioState", next);
        }
        return stub.toString();
    }

    private static ObjectNode checkAnswer(String path) {
        ObjectNode response = Target.object().put("status", 200);
        response.putObject("headers").put("Content-Type", "application/json");
        if (path.equals(TAX)) {
            response.put("bodyFileName", "tax-quote-ok.json").set("transformers", Target.array().add("response-template"));
        } else {
            response.put("bodyFileName", "fraud-check-approve.json");
        }
        return response;
    }

    private static String mapping(String path, ObjectNode response) {
        ObjectNode mapping = Target.object().put("priority", 1);
        mapping.putObject("request").put("method", "POST").put("urlPath", path);
        mapping.set("response", response);
        return mapping.toString();
    }

    private static ObjectNode parse(String json) {
        try {
            return (ObjectNode) Target.JSON.readTree(json);
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
