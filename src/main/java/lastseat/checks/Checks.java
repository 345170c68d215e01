package lastseat.checks;

import com.fasterxml.jackson.databind.JsonNode;
import lastseat.config.ChecksConfig;
import lastseat.inventory.Hold;
import lastseat.outside.OutsideHttp;
import lastseat.web.Json;
import lastseat.work.Deadline;
import lastseat.work.DeadlinePassed;
import lastseat.work.Scoped;
import lastseat.work.Timeline;

import java.io.IOException;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Step 2: the fraud check and the tax quote, forked together in one scope with the remaining
 * deadline and joined.
 *
 * <p>Contract: returns only when both succeeded. A decline ({@link FraudDeclined}), a failing
 * service ({@link CheckUnavailable}) or the deadline ({@link DeadlinePassed}) interrupts the other
 * call, whose HTTP exchange is cancelled, and waits for it before throwing.
 */
public final class Checks {
    /** What a DECIMAL(12,2) column can hold; a larger quote is nonsense, not a tax. */
    private static final BigDecimal MAX_TAX = new BigDecimal("1000000000");
    private final OutsideHttp http;
    private final ChecksConfig config;
    private final Duration retryAfter;

    /** {@code retryAfter}: what a buyer is told to wait when a check is down ({@code purchase.retry-after}). */
    public Checks(OutsideHttp http, ChecksConfig config, Duration retryAfter) {
        this.http = http;
        this.config = config;
        this.retryAfter = retryAfter;
    }

    public Quote run(Hold hold, Deadline deadline, Timeline timeline) throws DeadlinePassed, InterruptedException {
        return Scoped.both("checks-" + hold.purchaseId(), deadline,
                () -> timeline.step("fraud", () -> fraud(hold, deadline)),
                () -> timeline.step("tax", () -> tax(hold, deadline))).second();
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
            case "decline" -> throw new FraudDeclined(answer.path("reason").asText(null));
            default -> throw unavailable("fraud", "the answer has no decision", null);
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
                throw unavailable("tax", "the quote " + tax + " " + currency + " is not usable", null);
            }
            return new Quote(tax.setScale(2), currency);
        } catch (NumberFormatException e) {
            throw unavailable("tax", "the answer has no tax amount", e);
        }
    }

    private JsonNode call(String service, String path, Object body, Deadline deadline) throws InterruptedException {
        OutsideHttp.Answer answer;
        try {
            answer = http.postJson(http.uri(path), Json.text(body), Map.of(), deadline);
        } catch (IOException e) {
            throw unavailable(service, e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage()), e);
        }
        if (answer.status() != 200) {
            throw unavailable(service, "it answered " + answer.status(), null);
        }
        try {
            return Json.tree(answer.body());
        } catch (IOException e) {
            throw unavailable(service, "the answer is not JSON", e);
        }
    }

    private CheckUnavailable unavailable(String service, String what, Throwable cause) {
        return new CheckUnavailable(service, what, retryAfter, cause);
    }
}
