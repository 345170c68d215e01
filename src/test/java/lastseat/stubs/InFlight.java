package lastseat.stubs;

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
 * the delay its stub gave it. That end is taken from the stub, not from WireMock's completion
 * callback, because the callback runs after the answer is written (so a client could already have
 * sent its next request) or, with asynchronous responses, before the delayed answer is written.
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

    /** Forgets finished requests; ones still being served keep counting. */
    public static void reset() {
        DONE.clear();
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

    @Override
    public void afterComplete(ServeEvent e, Parameters p) {
        Long start = payment(e) ? OPEN.remove(e.getId()) : null;
        if (start == null) {
            return;
        }
        Integer delay = e.getTiming() == null ? null : e.getTiming().getAddedDelay();
        long served = TimeUnit.MILLISECONDS.toNanos(delay == null ? 0 : Math.max(0, delay));
        DONE.add(new long[]{start, start + served + 1});
    }
}
