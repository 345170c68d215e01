package lastseat.drill;

import lastseat.db.Database;
import lastseat.db.Sql;

/**
 * The booking step of the stampede drill, twice: {@link #unsafe} and {@link #safe} make the same
 * write after the same pause; they differ only in where the look sits relative to the pause.
 *
 * <p>Unsafe looks at the seat, pauses (the outside world: a fraud check, a slow network), then
 * writes what it saw. Every buyer who looked during the pause saw the seat free, so every one of
 * them is told yes. Safe pauses first, then looks and writes in one conditional statement; the
 * database lets exactly one of them change the row.
 *
 * <p>Hazard: {@link #unsafe} double-books on purpose. It exists only so the drill can show the race
 * happening ({@code drills.enabled}); the product books through {@code Inventory.reserve}, which
 * claims like {@link #safe}.
 */
final class Stampede {
    private final Database db;

    Stampede(Database db) {
        this.db = db;
    }

    /** Look, pause, write what was seen. */
    boolean unsafe(String eventId, String seat, String buyer, Runnable pause) {
        boolean free = db.read(c -> Sql.list(c, "SELECT state FROM seats WHERE event_id = ? AND label = ?",
                                             rs -> rs.getString(1), eventId, seat)).equals(java.util.List.of("AVAILABLE"));
        pause.run();
        return free && db.inTransaction(c -> Sql.update(c, "UPDATE seats SET state = 'SOLD', purchase_id = ? "
                                                           + "WHERE event_id = ? AND label = ?", buyer, eventId, seat) == 1);
    }

    /** Pause, then look and write in one conditional statement. */
    boolean safe(String eventId, String seat, String buyer, Runnable pause) {
        pause.run();
        return db.inTransaction(c -> Sql.update(c, "UPDATE seats SET state = 'SOLD', purchase_id = ? "
                                                   + "WHERE event_id = ? AND label = ? AND state = 'AVAILABLE'", buyer, eventId, seat) == 1);
    }
}
