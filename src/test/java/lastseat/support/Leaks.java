package lastseat.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import lastseat.testkit.Answer;

import java.io.IOException;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What must never reach a caller: the marks of an exception, a class name, SQL or a database's
 * message, a JSON library's message. Checked on answers (problems, purchases with their timelines, the
 * health check) and on the reasons stored for them; and the positive side, that a problem's detail is
 * a sentence a person reads.
 *
 * <p>Hazard: a denylist only finds what it names. It is a net under the rule (every such text is
 * dropped where it is caught, and logged), not the rule; a test input must not carry these words
 * itself, or an honest echo of it would look like a leak.
 */
public final class Leaks {
    /** The marks of internals in text meant for people. */
    public static final List<String> DENIED = List.of(
            "Exception", "exception", "java.", "javax.", "jakarta.", "org.h2", "org.postgresql", "PSQL", "com.fasterxml",
            "io.helidon", "com.zaxxer", "Hikari", "Jackson", "SQL", "sql", "JDBC", "jdbc", "Unrecognized", "Cannot deserialize",
            "Cannot construct", "Cannot coerce", "at [Source", "[line: ", "Caused by", "\tat ", "Syntax error", "ERROR:",
            "StackTrace", "NullPointer", "lastseat.");

    private static final ObjectMapper JSON = new ObjectMapper();

    private Leaks() {
    }

    /** {@code text} carries none of {@link #DENIED}; {@code what} says where it came from. */
    public static void none(String what, String text) {
        if (text == null) {
            return;
        }
        for (String mark : DENIED) {
            assertThat(text).as("%s shows '%s': %s", what, mark, text).doesNotContain(mark);
        }
    }

    /**
     * An answer that is a problem, and a clean one: {@code application/problem+json}, nothing of
     * {@link #DENIED} anywhere in it, a title and a detail that is a sentence. Returns its JSON.
     */
    public static JsonNode cleanProblem(String what, Answer answer) {
        assertThat(answer.header("Content-Type")).as("%s: %s", what, answer).isEqualTo("application/problem+json");
        none(what, answer.body());
        JsonNode problem = json(what, answer.body());
        assertThat(problem.path("type").asText()).as("%s: type", what).startsWith("urn:lastseat:problem:");
        assertThat(problem.path("status").asInt()).as("%s: status", what).isEqualTo(answer.status());
        assertThat(problem.path("title").asText()).as("%s: title", what).isNotBlank();
        sentence(what, problem.path("detail").asText(null));
        return problem;
    }

    /** {@code text} reads as a sentence: words, no line breaks or control characters, no JSON or code inside, not endless. */
    public static void sentence(String what, String text) {
        assertThat(text).as("%s: a detail", what).isNotNull();
        assertThat(text).as("%s: a sentence of words", what)
                .matches("[\\p{L}\\p{N}'\"(][^\\p{Cntrl}{}]{8,}")
                .contains(" ")
                .hasSizeLessThanOrEqualTo(400);
    }

    /** {@code GET /purchases/{id}} of a purchase: every outcome of its timeline and its reason, clean. */
    public static void cleanPurchase(String what, JsonNode purchase) {
        none(what + ": the purchase", purchase.toString());
        for (JsonNode step : purchase.path("timeline")) {
            String outcome = step.path("outcome").asText(null);
            if (outcome != null) {
                assertThat(outcome).as("%s: the outcome of step %s", what, step.path("step").asText())
                        .matches("[^\\p{Cntrl}{}]+");
            }
        }
    }

    private static JsonNode json(String what, String body) {
        try {
            return JSON.readTree(body);
        } catch (IOException e) {
            throw new AssertionError(what + ": the problem is not JSON: " + body, e);
        }
    }
}
