package lastseat.testkit;

import com.fasterxml.jackson.databind.JsonNode;

import java.time.Duration;
import java.time.Instant;

/** A purchase's timeline ({@code GET /purchases/{id}}) in one line, for a drill or a benchmark that says where the time went. */
public final class Timelines {
    private Timelines() {
    }

    /**
     * Each step as {@code name +offset duration (outcome);}: its start after the first step's, how long it took
     * ({@code open} when it never ended) and how it ended.
     */
    public static String describe(JsonNode timeline) {
        StringBuilder line = new StringBuilder();
        Instant first = null;
        for (JsonNode step : timeline) {
            Instant started = Instant.parse(step.path("startedAt").asText());
            first = first == null ? started : first;
            String ended = step.path("endedAt").asText("");
            line.append(' ').append(step.path("step").asText()).append(" +").append(Duration.between(first, started).toMillis())
                .append(ended.isEmpty() || ended.equals("null") ? " open" : " " + Duration.between(started, Instant.parse(ended)).toMillis() + " ms")
                .append(" (").append(step.path("outcome").asText()).append(");");
        }
        return line.toString();
    }
}
