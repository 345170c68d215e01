package lastseat.testkit;

import com.github.tomakehurst.wiremock.extension.Parameters;
import com.github.tomakehurst.wiremock.extension.ServeEventListener;
import com.github.tomakehurst.wiremock.stubbing.ServeEvent;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

/**
 * How many payment requests ({@code POST /payments}) the provider is serving at once, and the most
 * it ever served at once.
 *
 * <p>A request is being served from the moment it arrives until its answer is ready: arrival plus
 * the fixed delay of the stub it matched (payment stubs here use fixed delays only). That end is taken
 * from the stub, not from WireMock's completion callback, because the callback runs after the answer
 * is written (so a client could already have sent its next request), or with asynchronous responses
 * before the delayed answer is written, or not at all when the client hung up.
 */
public final class InFlight implements ServeEventListener {
    private static final Map<UUID, Long> OPEN = new ConcurrentHashMap<>();
    private static final ConcurrentLinkedQueue<long[]> DONE = new ConcurrentLinkedQueue<>();

    @Override
    public String getName() {
        return "payments-in-flight";
    }

    /** The most payment requests whose service overlapped, since the last {@link #reset()}. */
    public static int max() {
        List<long[]> edges = new ArrayList<>();
        for (long[] interval : DONE) {
            edges.add(new long[]{interval[0], +1});
            edges.add(new long[]{interval[1], -1});
        }
        OPEN.values().forEach(start -> edges.add(new long[]{start, +1}));
        // An answer ready at the same instant another request arrives did not overlap it.
        edges.sort(Comparator.<long[]>comparingLong(e -> e[0]).thenComparingLong(e -> e[1]));
        int now = 0;
        int most = 0;
        for (long[] edge : edges) {
            now += (int) edge[1];
            most = Math.max(most, now);
        }
        return most;
    }

    /** Payment requests arrived and not yet answered. */
    public static int current() {
        long now = System.nanoTime();
        return OPEN.size() + (int) DONE.stream().filter(i -> i[1] > now).count();
    }

    /** Forgets requests whose service is over; ones still being served keep counting. */
    public static void reset() {
        long now = System.nanoTime();
        DONE.removeIf(interval -> interval[1] <= now);
    }

    private static boolean payment(ServeEvent e) {
        return "POST".equals(e.getRequest().getMethod().getName())
               && e.getRequest().getUrl().split("\\?")[0].equals("/payments");
    }

    @Override
    public void beforeMatch(ServeEvent e, Parameters p) {
        if (payment(e)) {
            OPEN.put(e.getId(), System.nanoTime());
        }
    }

    /**
     * The end is known as soon as the stub is matched: arrival plus the stub's fixed delay. Waiting for
     * WireMock's completion callback instead would miss every request whose client hung up first (a
     * call abandoned at the deadline, a reset), leaving it counted as served forever.
     */
    @Override
    public void afterMatch(ServeEvent e, Parameters p) {
        Long start = payment(e) ? OPEN.remove(e.getId()) : null;
        if (start == null) {
            return;
        }
        Integer delay = e.getResponseDefinition() == null ? null : e.getResponseDefinition().getFixedDelayMilliseconds();
        long served = TimeUnit.MILLISECONDS.toNanos(delay == null ? 0 : Math.max(0, delay));
        DONE.add(new long[]{start, start + served + 1});
    }
}
