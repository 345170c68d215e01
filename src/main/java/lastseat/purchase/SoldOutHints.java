package lastseat.purchase;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Events whose free seats a purchase of this process last found too few for it: a hint that the next
 * purchase of a quantity there reads its seats before it claims its key, never an answer. The read
 * decides; a read that finds the seats free drops the hint.
 *
 * <p>Hazard: the hint decides only how a sold-out answer is reached — by a read and one write that
 * stores the 409 for the key, or by the key's claim, a reservation that misses and the stored answer —
 * never what the buyer or a retry of its key is told. A stale hint costs one read, a missing one two
 * commits and a reservation. At {@link #MOST_EVENTS} every hint is dropped.
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
