package lastseat.purchase;

import lastseat.inventory.Order;
import lastseat.inventory.SeatLabels;
import lastseat.web.Problem;
import lastseat.web.Text;

import java.util.List;
import java.util.regex.Pattern;

/**
 * The body of {@code POST /purchases}. Unknown fields are refused by the JSON reader; every text field
 * passes {@link Text} (no control characters, valid Unicode, its column's length) before its own format.
 */
record PurchaseRequest(String eventId, List<String> seats, Integer quantity, Buyer buyer, String paymentToken) {
    private static final Pattern EMAIL = Pattern.compile("[^@\\s]{1,64}@[^@\\s]{1,189}");
    private static final Pattern TOKEN = Pattern.compile("[A-Za-z0-9_-]{1,100}");

    record Buyer(String id, String email) {
    }

    /** Checks every field; the 400 problem names the first that is wrong. */
    Order toOrder(String client, String idempotencyKey, int maxSeats) {
        if (Text.checked("eventId", eventId, 64) == null || eventId.isBlank()) {
            throw invalid("eventId is required (at most 64 characters)");
        }
        if ((seats == null) == (quantity == null)) {
            throw invalid("give either seats (a list of seat labels) or quantity (a number), not both");
        }
        List<String> labels = seats == null ? null : SeatLabels.checked(seats, maxSeats);
        if (seats == null && (quantity < 1 || quantity > maxSeats)) {
            throw new Problem(400, "invalid-quantity", "Bad request", "quantity must be from 1 to " + maxSeats + ", got " + quantity);
        }
        if (buyer == null || Text.checked("buyer.id", buyer.id(), 100) == null || buyer.id().isBlank()) {
            throw invalid("buyer.id is required (at most 100 characters)");
        }
        if (Text.checked("buyer.email", buyer.email(), 254) == null || !EMAIL.matcher(buyer.email()).matches()) {
            throw invalid("buyer.email must be an email address");
        }
        if (Text.checked("paymentToken", paymentToken, 100) == null || !TOKEN.matcher(paymentToken).matches()) {
            throw invalid("paymentToken is required (1-100 letters, digits, '_' or '-')");
        }
        return new Order(eventId, labels, labels == null ? quantity : labels.size(),
                         buyer.id(), buyer.email(), paymentToken, client, idempotencyKey);
    }

    private static Problem invalid(String detail) {
        return Problem.badRequest("invalid-field", detail);
    }
}
