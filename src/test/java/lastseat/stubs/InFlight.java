package lastseat.stubs;

import com.github.tomakehurst.wiremock.extension.Parameters;
import com.github.tomakehurst.wiremock.extension.ServeEventListener;
import com.github.tomakehurst.wiremock.stubbing.ServeEvent;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How many payment requests ({@code POST /payments}) the provider is serving at once, and the most
 * it ever served at once. With asynchronous responses WireMock reports completion before the
 * delayed answer is written, so the decrement waits for the delay that request was given.
 */
public final class InFlight implements ServeEventListener {
    private static final boolean ASYNC = Boolean.getBoolean("lastseat.stubs.async-responses");
    static final AtomicInteger CURRENT = new AtomicInteger();
    static final AtomicInteger MAX = new AtomicInteger();
    private static final ScheduledExecutorService LATER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "in-flight-decrement");
        t.setDaemon(true);
        return t;
    });

    @Override
    public String getName() {
        return "payments-in-flight";
    }

    public static int max() {
        return MAX.get();
    }

    public static int current() {
        return CURRENT.get();
    }

    public static void reset() {
        MAX.set(CURRENT.get());
    }

    private static boolean payment(ServeEvent e) {
        return "POST".equals(e.getRequest().getMethod().getName())
               && e.getRequest().getUrl().split("\\?")[0].equals("/payments");
    }

    @Override
    public void beforeMatch(ServeEvent e, Parameters p) {
        if (payment(e)) {
            MAX.accumulateAndGet(CURRENT.incrementAndGet(), Math::max);
        }
    }

    @Override
    public void afterComplete(ServeEvent e, Parameters p) {
        if (!payment(e)) {
            return;
        }
        Integer delay = e.getTiming() == null ? null : e.getTiming().getAddedDelay();
        if (ASYNC && delay != null && delay > 0) {
            LATER.schedule(CURRENT::decrementAndGet, delay, TimeUnit.MILLISECONDS);
        } else {
            CURRENT.decrementAndGet();
        }
    }
}
