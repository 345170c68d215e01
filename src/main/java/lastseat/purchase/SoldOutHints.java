package lastseat.purchase;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Events whose free seats a purchase of this process last found too few for it: a hint that the next
 * purchase of a quantity there reads its seats before it claims its key, never an answer. The read
 * decides; a read that finds the seats free drops the hint.
 *
 * <p>Hazard: the hint decides only whether a sold-out answer costs writes. Told 409 after the read, a
 * buyer's key is not stored (as for a buyer given no place), so a retry after seats came back runs
 * afresh; told 409 by its own reservation, the key keeps the 409. A stale hint costs one read, a
 * missing one the key's claim and stored answer. At {@link #MOST_EVENTS} every hint is dropped.
 */
final class SoldOutHints {
    /** The most events hinted at once: past it all are dropped, and each is learned again by its next refusal. */
    static final int MOST_EVENTS = 1000;
    private final Set<String> events = ConcurrentHashMap.newKeySet();

    void soldOut(String eventId) {
        if (events.size() >= MOST_EVENTS) {
            events.clear();
        }
        events.add(eventId);
    }

    void seatsFree(String eventId) {
        events.remove(eventId);
    }

    boolean hinted(String eventId) {
        return events.contains(eventId);
    }
}
