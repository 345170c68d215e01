package lastseat.access;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Each client's purchases in flight in this process, against the limit its key carries, so that one
 * client cannot take every admission place of an instance while the others wait.
 *
 * <p>Contract: {@link #enter} gives a slot while the client has fewer purchases in flight here than its
 * key's limit (always, for a key without one) and none past it; a slot is given back by closing it, once.
 * The limit is read from the key on every request, so the operator's change holds from the next request.
 *
 * <p>Hazard: a slot not closed is a place lost for good; hold it in try-with-resources. The count is per
 * instance, as admission is: a client with limit 5 may have 5 in flight on each.
 */
public final class ClientLimits {
    private final Map<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();

    /** One purchase of a client, counted until closed. */
    public interface Slot extends AutoCloseable {
        @Override
        void close();
    }

    private static final Slot UNCOUNTED = () -> {
    };

    public Optional<Slot> enter(Caller caller) {
        if (caller.maxInFlight().isEmpty()) {
            return Optional.of(UNCOUNTED);
        }
        int limit = caller.maxInFlight().getAsInt();
        AtomicInteger count = inFlight.computeIfAbsent(caller.name(), name -> new AtomicInteger());
        while (true) {
            int now = count.get();
            if (now >= limit) {
                return Optional.empty();
            }
            if (count.compareAndSet(now, now + 1)) {
                return Optional.of(once(count));
            }
        }
    }

    /** Purchases of {@code client} in flight here (0 for one never counted). */
    public int inFlight(String client) {
        AtomicInteger count = inFlight.get(client);
        return count == null ? 0 : count.get();
    }

    private static Slot once(AtomicInteger count) {
        AtomicInteger closed = new AtomicInteger();
        return () -> {
            if (closed.compareAndSet(0, 1)) {
                count.decrementAndGet();
            }
        };
    }
}
