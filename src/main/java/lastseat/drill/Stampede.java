package lastseat.drill;

import lastseat.db.Database;
import lastseat.db.Sql;
import lastseat.inventory.Order;
import lastseat.purchase.Purchases;

import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * The booking step of the stampede drill, twice: {@link #unsafe} and {@link #safe} take a seat for
 * a buyer after the same pause; they differ only in where the look sits relative to the pause.
 *
 * <p>Safe is the product's own booking step, {@link Purchases#reserve} (its claim is one conditional
 * {@code UPDATE seats ... WHERE ... AND state = 'AVAILABLE'}): the database lets exactly one buyer
 * change the row. Unsafe is the same claim with the guard taken out, and a look before the pause
 * instead: every buyer who looked during the pause saw the seat free, so every one of them is told
 * yes.
 *
 * <p>Hazard: {@link #unsafe} double-books on purpose. It exists only so the drill can show the race
 * happening ({@code drills.enabled}); it writes only to the stampede's own event.
 */
final class Stampede {
    private final Database db;
    private final Purchases purchases;

    Stampede(Database db, Purchases purchases) {
        this.db = db;
        this.purchases = purchases;
    }

    /** Look, pause, then claim what was seen without asking again; the seat's holder is {@code buyer}. */
    boolean unsafe(String eventId, String seat, String buyer, Runnable pause) {
        boolean free = db.read(c -> Sql.list(c, "SELECT state FROM seats WHERE event_id = ? AND label = ?",
                                             rs -> rs.getString(1), eventId, seat)).equals(List.of("AVAILABLE"));
        pause.run();
        return free && db.inTransaction(c -> Sql.update(c, "UPDATE seats SET state = 'HELD', purchase_id = ? "
                                                           + "WHERE event_id = ? AND label = ?", buyer, eventId, seat) == 1);
    }

    /**
     * Pause, then the product's reservation of the seat; returns the purchase that holds it, or
     * empty when the claim missed it.
     */
    Optional<String> safe(String eventId, String seat, String buyer, Runnable pause) {
        pause.run();
        return purchases.reserve(new Order(eventId, List.of(seat), 1, buyer, buyer + "@stampede.invalid", "tok_stampede", "stampede",
                                           "stampede-" + UUID.randomUUID())) instanceof Purchases.Reservation.Held held
                ? Optional.of(held.hold().purchaseId()) : Optional.empty();
    }
}
