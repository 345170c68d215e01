package lastseat.checks;

import com.fasterxml.jackson.databind.JsonNode;
import lastseat.config.ChecksConfig;
import lastseat.inventory.Hold;
import lastseat.outside.Outside;
import lastseat.web.Json;
import lastseat.web.Text;
import lastseat.work.Deadline;
import lastseat.work.DeadlinePassed;
import lastseat.work.Scoped;
import lastseat.work.Timeline;

import java.io.IOException;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Step 2: the fraud check and the tax quote, forked together in one scope with the remaining
 * deadline and joined; what they said comes back as a {@link Checked} value.
 *
 * <p>Contract: {@link Checked.Passed} only when both passed. A decline or a failing service ends
 * the scope at once — it interrupts the other call, whose HTTP exchange is cancelled, and waits for
 * it — and comes back as {@link Checked.Declined} or {@link Checked.Unavailable}; the deadline
 * does the same and is thrown ({@link DeadlinePassed}), for the caller to say during which step.
 *
 * <p>Inside the scope a subtask fails by throwing {@link Stop} (that is how it cancels its
 * sibling); nothing else may leave this class as an exception but the deadline and the interrupt.
 */
public final class Checks {
    private static final Logger LOG = Logger.getLogger(Checks.class.getName());
    /** What a DECIMAL(12,2) column can hold; a larger quote is nonsense, not a tax. */
    private static final BigDecimal MAX_TAX = new BigDecimal("1000000000");
    /** The most of a decline's reason that is shown and stored. */
    private static final int MAX_REASON = 100;
    private final Outside http;
    private final ChecksConfig config;

    public Checks(Outside http, ChecksConfig config) {
        this.http = http;
        this.config = config;
    }

    public Checked run(Hold hold, Deadline deadline, Timeline timeline) throws DeadlinePassed, InterruptedException {
        try {
            return new Checked.Passed(Scoped.both("checks-" + hold.purchaseId(), deadline,
                    () -> timeline.step("fraud", () -> fraud(hold, deadline)),
                    () -> timeline.step("tax", () -> tax(hold, deadline))).second());
        } catch (Stop stop) {
            return stop.checked;
        }
    }

    /** A subtask's way to end the scope with what it found (a decline, an unusable service). */
    private static final class Stop extends RuntimeException implements Timeline.Outcome {
        private final Checked checked;

        Stop(Checked checked) {
            super(null, null, false, false);
            this.checked = checked;
        }

        /** What the step's timeline shows. */
        @Override
        public String outcome() {
            return switch (checked) {
                case Checked.Declined declined -> "declined" + (declined.reason() == null ? "" : ": " + declined.reason());
                case Checked.Unavailable unavailable -> unavailable.what();
                case Checked.Passed passed -> "passed";
            };
        }
    }

    private Boolean fraud(Hold hold, Deadline deadline) throws InterruptedException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("purchaseId", hold.purchaseId());
        body.put("buyer", Map.of("id", hold.buyerId(), "email", hold.buyerEmail()));
        body.put("amount", hold.amount().toPlainString());
        body.put("currency", hold.currency());
        JsonNode answer = call("fraud", config.fraudPath(), body, deadline);
        String decision = answer.path("decision").asText("");
        return switch (decision) {
            case "approve" -> true;
            case "decline" -> throw new Stop(new Checked.Declined(Text.cleaned(answer.path("reason").asText(null), MAX_REASON)));
            default -> throw unavailable("fraud", "the answer has no decision");
        };
    }

    private Quote tax(Hold hold, Deadline deadline) throws InterruptedException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("purchaseId", hold.purchaseId());
        body.put("eventId", hold.eventId());
        body.put("amount", hold.amount().toPlainString());
        body.put("currency", hold.currency());
        JsonNode answer = call("tax", config.taxPath(), body, deadline);
        try {
            BigDecimal tax = new BigDecimal(answer.path("tax").asText());
            String currency = answer.path("currency").asText();
            if (tax.signum() < 0 || tax.scale() > 2 || tax.compareTo(MAX_TAX) >= 0 || !hold.currency().equals(currency)) {
                // Not repeated: the service's words are not ours to show the buyer.
                throw unavailable("tax", "the quote is not usable (negative, finer than cents, too large or in another currency)");
            }
            return new Quote(tax.setScale(2), currency);
        } catch (NumberFormatException e) {
            throw unavailable("tax", "the answer has no tax amount");
        }
    }

    private JsonNode call(String service, String path, Object body, Deadline deadline) throws InterruptedException {
        Outside.Answer answer;
        try {
            answer = http.post(path, Json.text(body), Map.of(), deadline);
        } catch (IOException e) {
            // The buyer is told the sentence; what the client library said is for the log. The sentence still
            // tells an operator a service that took no connection from one that took the request and failed it.
            String what = switch (Outside.Failure.of(e)) {
                case NO_CONNECTION_IN_TIME, CONNECTION_REFUSED -> "it could not be reached";
                case NO_ANSWER_IN_TIME -> "it did not answer in time";
                case BROKEN -> "the exchange failed before an answer";
            };
            LOG.log(Level.FINE, e, () -> service + ": " + what);
            throw unavailable(service, what);
        }
        if (answer.status() != 200) {
            throw unavailable(service, "it answered " + answer.status());
        }
        try {
            return Json.tree(answer.body());
        } catch (IOException e) {
            LOG.log(Level.FINE, e, () -> service + " answered something that is not JSON");
            throw unavailable(service, "the answer is not JSON");
        }
    }

    private static Stop unavailable(String service, String what) {
        return new Stop(new Checked.Unavailable(service, what));
    }
}
