package lastseat.access;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Instance;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Bad input to the key routes and odd {@code Authorization} headers, on a real server: each is a clear
 * problem+json 4xx and changes nothing. A key whose id exists but whose secret is wrong is refused like
 * an unknown one (the hashes are compared, not the ids).
 */
class KeysInputTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.shared();

    @Test
    void badInputToTheKeyRoutesIsAClearProblemAndMakesOrChangesNoKey() {
        Instance at = app.client().instance();
        String existing = "input-" + UUID.randomUUID().toString().substring(0, 8);
        assertThat(admin("POST", "/admin/clients", "{\"name\":\"" + existing + "\",\"maxInFlight\":2}").status()).isEqualTo(201);
        String revoked = "gone-" + UUID.randomUUID().toString().substring(0, 8);
        assertThat(admin("POST", "/admin/clients", "{\"name\":\"" + revoked + "\"}").status()).isEqualTo(201);
        assertThat(admin("DELETE", "/admin/clients/" + revoked, null).status()).isEqualTo(200);
        String keysBefore = app.db().strings("SELECT name || ':' || COALESCE(CAST(max_in_flight AS VARCHAR(10)), '-') || ':' "
                                             + "|| CASE WHEN revoked_at IS NULL THEN 'live' ELSE 'revoked' END FROM api_keys ORDER BY name")
                .toString();
        Map<String, Answer> answers = new LinkedHashMap<>();

        answers.put("malformed JSON", admin("POST", "/admin/clients", "{\"name\":"));
        answers.put("JSON null", admin("POST", "/admin/clients", "null"));
        answers.put("an unknown field", admin("POST", "/admin/clients", "{\"name\":\"x1\",\"role\":\"operator\"}"));
        answers.put("no name", admin("POST", "/admin/clients", "{}"));
        answers.put("an empty name", admin("POST", "/admin/clients", "{\"name\":\"\"}"));
        answers.put("capitals and spaces", admin("POST", "/admin/clients", "{\"name\":\"My Shop\"}"));
        answers.put("a NUL in the name", admin("POST", "/admin/clients", "{\"name\":\"shop\\u0000x\"}"));
        answers.put("a name of 65 characters", admin("POST", "/admin/clients", "{\"name\":\"" + "a".repeat(65) + "\"}"));
        answers.put("a name as a number", admin("POST", "/admin/clients", "{\"name\":42}"));
        answers.put("a limit of 0", admin("POST", "/admin/clients", "{\"name\":\"x2\",\"maxInFlight\":0}"));
        answers.put("a negative limit", admin("POST", "/admin/clients", "{\"name\":\"x3\",\"maxInFlight\":-1}"));
        answers.put("an absurd limit", admin("POST", "/admin/clients", "{\"name\":\"x4\",\"maxInFlight\":100000000000}"));
        answers.put("a limit as a string", admin("POST", "/admin/clients", "{\"name\":\"x5\",\"maxInFlight\":\"5\"}"));
        answers.put("a fractional limit", admin("POST", "/admin/clients", "{\"name\":\"x6\",\"maxInFlight\":1.5}"));
        answers.put("a body over 4 KB", admin("POST", "/admin/clients", "{\"name\":\"" + "a".repeat(5000) + "\"}"));
        answers.put("a name taken", admin("POST", "/admin/clients", "{\"name\":\"" + existing + "\"}"));
        answers.put("a limit for nobody", admin("PATCH", "/admin/clients/nobody-" + UUID.randomUUID().toString().substring(0, 8),
                                                "{\"maxInFlight\":3}"));
        answers.put("a limit with an unknown field", admin("PATCH", "/admin/clients/" + existing, "{\"max\":3}"));
        answers.put("a limit of 0 for a client", admin("PATCH", "/admin/clients/" + existing, "{\"maxInFlight\":0}"));
        answers.put("a limit change without the limit", admin("PATCH", "/admin/clients/" + existing, "{}"));
        answers.put("a limit as a fraction", admin("PATCH", "/admin/clients/" + existing, "{\"maxInFlight\":2.5}"));
        answers.put("a limit as a string", admin("PATCH", "/admin/clients/" + existing, "{\"maxInFlight\":\"3\"}"));
        answers.put("a limit as a list", admin("PATCH", "/admin/clients/" + existing, "[3]"));
        answers.put("a limit on a revoked client", admin("PATCH", "/admin/clients/" + revoked, "{\"maxInFlight\":3}"));
        answers.put("a limit on the operator's key", admin("PATCH", "/admin/clients/operator", "{\"maxInFlight\":3}"));
        answers.put("revoking the operator's key", admin("DELETE", "/admin/clients/operator", null));
        answers.put("revoking nobody", admin("DELETE", "/admin/clients/nobody", null));
        answers.put("a bad name in the path", admin("DELETE", "/admin/clients/NOT%20A%20NAME", null));
        answers.put("text instead of JSON", app.client().post("/admin/clients", Map.of("Content-Type", "text/plain",
                "Authorization", "Bearer " + at.operatorKey()), "{\"name\":\"x7\"}".getBytes(StandardCharsets.UTF_8)));

        List<String> wrong = new ArrayList<>();
        answers.forEach((what, answer) -> {
            if (answer.status() < 400 || answer.status() >= 500 || !"application/problem+json".equals(answer.header("Content-Type"))
                || answer.json().path("detail").asText().isBlank()) {
                wrong.add(what + ": " + answer.status() + " " + answer.body());
            }
        });
        assertThat(wrong).as("not a clear 4xx").isEmpty();
        assertThat(answers.get("a name taken").status()).isEqualTo(409);
        assertThat(answers.get("a limit for nobody").status()).isEqualTo(404);
        assertThat(answers.get("revoking the operator's key").status()).as("only client keys are revoked here").isEqualTo(404);
        assertThat(answers.get("a body over 4 KB").status()).isEqualTo(413);
        assertThat(answers.get("text instead of JSON").status()).isEqualTo(415);
        assertThat(answers.get("a limit on a revoked client").status()).isEqualTo(404);
        assertThat(admin("GET", "/admin/clients/" + existing, null).json().path("maxInFlight").asInt()).isEqualTo(2);
        assertThat(app.db().strings("SELECT name || ':' || COALESCE(CAST(max_in_flight AS VARCHAR(10)), '-') || ':' "
                                    + "|| CASE WHEN revoked_at IS NULL THEN 'live' ELSE 'revoked' END FROM api_keys ORDER BY name")
                           .toString()).as("no key made, changed or revoked").isEqualTo(keysBefore);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void anAuthorizationThatIsNotAValidBearerKeyIsRefusedAndTheSchemeIsReadInAnyCase() {
        Instance at = app.client().instance();
        String id = at.clientKey().substring(3, 19);
        Map<String, String> refused = new LinkedHashMap<>();
        refused.put("Bearer without a key", "Bearer");
        refused.put("Bearer and spaces", "Bearer    ");
        refused.put("Basic", "Basic " + java.util.Base64.getEncoder().encodeToString(("x:" + at.clientKey()).getBytes(StandardCharsets.UTF_8)));
        refused.put("the key without a scheme", at.clientKey());
        refused.put("a known id with a wrong secret", "Bearer ls_" + id + "_" + "f".repeat(32));
        refused.put("a known id with the secret cut short", "Bearer ls_" + id + "_" + at.clientKey().substring(20, 40));
        refused.put("capitals in the key", "Bearer " + at.clientKey().toUpperCase());
        refused.put("a key of 4 KB", "Bearer " + "a".repeat(4096));
        refused.put("two keys", "Bearer " + at.clientKey() + " " + at.clientKey());
        long purchasesBefore = app.db().count("SELECT COUNT(*) FROM purchases");
        String event = app.newEvent("A1");

        List<String> wrong = new ArrayList<>();
        refused.forEach((what, header) -> {
            Answer answer = app.client().post("/purchases", Map.of("Authorization", header, "Content-Type", "application/json",
                    "Idempotency-Key", UUID.randomUUID().toString()), lastseat.testkit.LastseatClient.seatsBody(event, "A1")
                    .getBytes(StandardCharsets.UTF_8));
            if (answer.status() != 401 || !String.valueOf(answer.header("WWW-Authenticate")).startsWith("Bearer")) {
                wrong.add(what + ": " + answer.status() + " " + answer.body());
            }
        });
        Answer lowercase = app.client().post("/purchases", Map.of("Authorization", "bearer " + at.clientKey(), "Content-Type",
                "application/json", "Idempotency-Key", UUID.randomUUID().toString()), lastseat.testkit.LastseatClient.seatsBody(event, "A1")
                .getBytes(StandardCharsets.UTF_8));

        assertThat(wrong).as("not refused with 401").isEmpty();
        assertThat(lowercase.status()).as("the scheme's case does not matter (RFC 9110): " + lowercase).isEqualTo(201);
        assertThat(app.db().count("SELECT COUNT(*) FROM purchases")).as("only the one with a good key").isEqualTo(purchasesBefore + 1);
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    private static Answer admin(String method, String path, String body) {
        Instance at = app.client().instance();
        return app.client().send(method, at.admin(), path, at.operatorKey(), null, body);
    }
}
