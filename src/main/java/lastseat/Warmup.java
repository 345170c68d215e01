package lastseat;

import com.sun.net.httpserver.HttpServer;
import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import io.helidon.metrics.api.Meter;
import io.helidon.metrics.api.Metrics;
import lastseat.access.ApiKeys;
import lastseat.access.Role;
import lastseat.config.LastseatConfig;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The warm-up ({@code warm-up.*}): before a process listens, it starts a throwaway copy of itself —
 * {@link Main#start} with the same configuration but an in-memory H2 database, ports on 127.0.0.1
 * only, keys of its own and a stand-in for the outside services on the loopback — and buys from it
 * over HTTP the way an on-sale does: bursts of buyers at a last seat, each burst on new connections,
 * and buyers of a larger event. Then it stops the copy. The first buyers of the real process then meet
 * code that is loaded, linked and compiled, not a server a moment old (docs/BENCHMARKS.md, "Warm-up").
 *
 * <p>Contract: nothing leaves the machine and nothing reaches {@code db.url}: the copy's database is
 * dropped with it, its stand-in answers fraud approve, tax zero and payment captured, and no metric of
 * the real process counts the warm-up (what the copy registered is removed before the real process
 * makes its own). It is bounded by {@code warm-up.purchases} and {@code warm-up.max-time}; a failure
 * is logged and start-up goes on, as a cold start would.
 *
 * <p>Hazard: the metrics the copy made are removed by identity, all of them that did not exist before
 * it started. Run it before the real process makes any meter — {@link Main#start} does — and never
 * beside another lastseat in the same JVM (the tests turn it off), whose meters it would share.
 */
final class Warmup {
    private static final Logger LOG = Logger.getLogger(Warmup.class.getName());
    private static final HexFormat HEX = HexFormat.of();
    /** Buyers sent together: at a one-seat event (the cold burst) and at a larger one. */
    private static final int AT_ONCE = 40;
    private static final Pattern ID = Pattern.compile("\"id\"\\s*:\\s*\"([^\"]+)\"");

    private Warmup() {
    }

    /** What a warm-up did: requests sent, answers by status, how long the copy took to start, the buying, and the JIT's catching up after it. */
    record Done(int sent, Map<Integer, Integer> answers, Duration started, Duration bought, Duration compiled) {
        @Override
        public String toString() {
            return "a throwaway copy started in " + started.toMillis() + " ms, " + sent + " purchase requests to it in " + bought.toMillis()
                   + " ms, answered " + answers + "; the JIT caught up " + compiled.toMillis() + " ms later";
        }
    }

    static Done run(Config source, LastseatConfig config) {
        long start = System.nanoTime();
        long until = start + config.warmUp().maxTime().toNanos();
        Set<Meter> before = meters();
        HttpServer standIn = null;
        Main.Running copy = null;
        try {
            standIn = standIn(config);
            String operatorKey = key();
            Map<String, String> settings = new HashMap<>(source.asMap().orElse(Map.of()));
            settings.putAll(Map.ofEntries(
                    Map.entry("server.port", "0"), Map.entry("server.host", "127.0.0.1"),
                    Map.entry("access.admin-port", "0"), Map.entry("access.admin-host", "127.0.0.1"),
                    Map.entry("db.url", "jdbc:h2:mem:lastseat-warm-up-" + UUID.randomUUID()),
                    Map.entry("db.user", "sa"), Map.entry("db.password", ""),
                    Map.entry("outside.base-url", "http://127.0.0.1:" + standIn.getAddress().getPort()),
                    Map.entry("access.operator-key", operatorKey),
                    Map.entry("demo.create-event", "false"), Map.entry("demo.create-keys", "false"),
                    Map.entry("drills.enabled", "false"),
                    Map.entry("warm-up.purchases", "0")));
            copy = Main.start(Config.just(ConfigSources.create(settings)));
            long started = System.nanoTime();
            String clientKey = ((ApiKeys.Made.Created) copy.services().apiKeys().create("warm-up", Role.CLIENT, OptionalInt.empty())).key();
            Buyers buyers = new Buyers(URI.create("http://127.0.0.1:" + copy.port()), operatorKey, clientKey, until);
            Map<Integer, Integer> answers = buyers.buy(config.warmUp().purchases(), config.events().maxCapacity());
            long bought = System.nanoTime();
            compiled(until);
            return new Done(buyers.sent.get(), answers, Duration.ofNanos(started - start), Duration.ofNanos(bought - started),
                            Duration.ofNanos(System.nanoTime() - bought));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Done(0, Map.of(), Duration.ofNanos(System.nanoTime() - start), Duration.ZERO, Duration.ZERO);
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "warm-up failed; lastseat starts without it", e);
            return new Done(0, Map.of(), Duration.ofNanos(System.nanoTime() - start), Duration.ZERO, Duration.ZERO);
        } finally {
            if (copy != null) {
                copy.close();
            }
            if (standIn != null) {
                standIn.stop(0);
            }
            Set<Meter> made = meters();
            made.removeAll(before);
            made.forEach(Metrics.globalRegistry()::remove);
        }
    }

    /**
     * Waits, at most until {@code until}, for the JIT compilers to have had nothing to do for
     * {@link #QUIET}: the compilations the buying queued would otherwise take the CPU from the first
     * real buyers.
     */
    private static void compiled(long until) throws InterruptedException {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return;
        }
        long last = jit.getTotalCompilationTime();
        while (System.nanoTime() < until) {
            Thread.sleep(QUIET);
            long now = jit.getTotalCompilationTime();
            if (now == last) {
                return;
            }
            last = now;
        }
    }

    /** How long the JIT compilers must have been idle for the warm-up to end before its bound. */
    private static final Duration QUIET = Duration.ofMillis(100);

    private static Set<Meter> meters() {
        Set<Meter> meters = Collections.newSetFromMap(new IdentityHashMap<>());
        Metrics.globalRegistry().meters().forEach(meters::add);
        return meters;
    }

    /** A key of the form {@code ls_<16 hex>_<32 hex>}, random. */
    private static String key() {
        SecureRandom random = new SecureRandom();
        byte[] id = new byte[8];
        byte[] secret = new byte[16];
        random.nextBytes(id);
        random.nextBytes(secret);
        return "ls_" + HEX.formatHex(id) + "_" + HEX.formatHex(secret);
    }

    /** The outside services as the copy sees them: on the loopback, answering at once, every charge captured. */
    private static HttpServer standIn(LastseatConfig config) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        answer(server, config.checks().fraudPath(), 200, "{\"decision\":\"approve\"}");
        answer(server, config.checks().taxPath(), 200, "{\"tax\":\"0.00\",\"currency\":\"EUR\"}");
        answer(server, config.payment().path(), 201, "{\"id\":\"pay_warm_up\",\"status\":\"captured\"}");
        answer(server, config.outbox().emailPath(), 202, "{}");
        answer(server, config.outbox().refundPath(), 201, "{}");
        server.start();
        return server;
    }

    private static void answer(HttpServer server, String path, int status, String json) {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        server.createContext(path, exchange -> {
            try (exchange; OutputStream out = exchange.getResponseBody()) {
                exchange.getRequestBody().readAllBytes();
                exchange.getResponseHeaders().set("Content-Type", "application/json");
                // A lookup by key finds the charge the copy made.
                exchange.sendResponseHeaders(exchange.getRequestMethod().equals("GET") ? 200 : status, body.length);
                out.write(body);
            }
        });
    }

    /** Buyers of the copy: rounds of {@link #AT_ONCE} at a one-seat event and as many at a larger one, each round on new connections. */
    private record Buyers(URI copy, String operatorKey, String clientKey, long until, AtomicInteger sent) {

        Buyers(URI copy, String operatorKey, String clientKey, long until) {
            this(copy, operatorKey, clientKey, until, new AtomicInteger());
        }

        Map<Integer, Integer> buy(int purchases, int maxCapacity) throws IOException, InterruptedException {
            Map<Integer, Integer> answers = new ConcurrentHashMap<>();
            if (System.nanoTime() >= until) {
                return answers;
            }
            try (HttpClient admin = HttpClient.newHttpClient()) {
                String larger = event(admin, Math.min(purchases, maxCapacity));
                while (sent.get() < purchases && System.nanoTime() < until) {
                    String lastSeat = event(admin, 1);
                    try (HttpClient round = HttpClient.newHttpClient();
                         ExecutorService buyers = Executors.newVirtualThreadPerTaskExecutor()) {
                        List<Future<?>> running = new ArrayList<>();
                        for (int i = 0; i < 2 * AT_ONCE && sent.get() < purchases; i++) {
                            String event = i % 2 == 0 ? lastSeat : larger;
                            sent.incrementAndGet();
                            running.add(buyers.submit(() -> {
                                answers.merge(purchase(round, event), 1, Integer::sum);
                                return null;
                            }));
                        }
                        for (Future<?> one : running) {
                            try {
                                one.get();
                            } catch (java.util.concurrent.ExecutionException e) {
                                answers.merge(0, 1, Integer::sum);
                            }
                        }
                    }
                }
            }
            return new TreeMap<>(answers);
        }

        private String event(HttpClient http, int capacity) throws IOException, InterruptedException {
            HttpResponse<String> created = http.send(request("/events", operatorKey)
                    .POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"warm-up\",\"capacity\":" + capacity
                                                              + ",\"price\":\"10.00\",\"currency\":\"EUR\"}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            Matcher id = ID.matcher(created.body());
            if (created.statusCode() != 201 || !id.find()) {
                throw new IllegalStateException("the throwaway copy did not create an event: " + created.statusCode());
            }
            return id.group(1);
        }

        private int purchase(HttpClient http, String event) throws IOException, InterruptedException {
            String buyer = UUID.randomUUID().toString();
            return http.send(request("/purchases", clientKey).header("Idempotency-Key", buyer)
                    .POST(HttpRequest.BodyPublishers.ofString("{\"eventId\":\"" + event + "\",\"quantity\":1,\"buyer\":{\"id\":\"" + buyer
                                                              + "\",\"email\":\"warm-up@lastseat.invalid\"},\"paymentToken\":\"tok_warm_up\"}"))
                    .build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        }

        private HttpRequest.Builder request(String path, String key) {
            return HttpRequest.newBuilder(copy.resolve(path)).timeout(Duration.ofSeconds(10))
                    .header("Authorization", "Bearer " + key).header("Content-Type", "application/json");
        }
    }
}
