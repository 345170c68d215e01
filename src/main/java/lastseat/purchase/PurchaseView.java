package lastseat.purchase;

import com.fasterxml.jackson.annotation.JsonInclude;

import lastseat.checks.Quote;
import lastseat.inventory.Hold;

import java.util.List;

/**
 * A purchase as clients see it. Money is a decimal string. {@code timeline} is shown by
 * {@code GET /purchases/{id}} and left out of the answer to the purchase itself.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PurchaseView(String id, String state, String eventId, List<String> seats, String amount, String tax,
                           String total, String currency, List<Ticket> tickets, String reason, String holdExpiresAt,
                           List<Step> timeline) {

    public record Ticket(String id, String seat) {
    }

    public record Step(String step, String startedAt, String endedAt, String outcome) {
    }

    /** The same purchase without its timeline, as answers to POST show it. */
    PurchaseView withoutTimeline() {
        return new PurchaseView(id, state, eventId, seats, amount, tax, total, currency, tickets, reason, holdExpiresAt, null);
    }

    /** The answer to a purchase, from what the flow knows (the hold, the quote, the tickets it wrote). */
    static PurchaseView of(Hold hold, Quote quote, PurchaseState state, List<Ticket> tickets) {
        return new PurchaseView(hold.purchaseId(), state.name(), hold.eventId(), hold.seats(),
                hold.amount().toPlainString(), quote == null ? null : quote.tax().toPlainString(),
                quote == null ? null : hold.amount().add(quote.tax()).toPlainString(),
                hold.currency(), List.copyOf(tickets), null, hold.expiresAt().toString(), null);
    }

}
