package lastseat.inventory;

import java.util.List;

/**
 * A validated request to buy: either named {@code seats} (then {@code quantity} is their count) or
 * any {@code quantity} seats of the event; {@code client} is the name of the key that sent it, which with
 * {@code idempotencyKey} makes the request's identity.
 */
public record Order(String eventId, List<String> seats, int quantity, String buyerId, String buyerEmail,
                    String paymentToken, String client, String idempotencyKey) {

    public boolean namesSeats() {
        return seats != null;
    }
}
