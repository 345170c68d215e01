package lastseat;

import com.sun.net.httpserver.HttpServer;
import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import io.helidon.metrics.api.Meter;
import io.helidon.metrics.api.Metrics;
import lastseat.access.ApiKeys;
import lastseat.access.Role;
import lastseat.config.LastseatConfig;
import lastseat.web.Problem;

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
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
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
 * {@link Main#start} with lastseat's own keys ({@link LastseatConfig#settings}; of {@code server.*}
 * only {@code max-payload-size}), but a database of its own ({@link WarmupDatabase}: an in-memory H2, or
 * on PostgreSQL a schema of its own), ports on 127.0.0.1 only, keys of its
 * own, a deadline its cold first round can finish in ({@link #COPY_DEADLINE}) and a stand-in for the
 * outside services on the loopback — and buys from it over HTTP the way an on-sale does: bursts of
 * buyers at a last seat, each burst on new connections, and buyers of a larger event. Then it stops the
 * copy. The first buyers of the real process then meet code that is loaded, linked and compiled, not a
 * server a moment old (docs/BENCHMARKS.md, "Warm-up before listening").
 *
 * <p>Contract: nothing leaves the machine and nothing reaches {@code db.url}'s tables: the copy is not
 * started unless its checked configuration points at its own database, the stand-in and 127.0.0.1; its
 * database is dropped with it; the stand-in answers fraud approve, tax zero and payment captured; and
 * no metric of the real process counts the warm-up (what the copy registered is removed before the
 * real process makes its own). {@code warm-up.purchases} bounds the requests sent, {@code
 * warm-up.max-time} the buying and the wait for the JIT (every request times out at what is left of
 * it); the copy's own start comes before. A failure is logged and start-up goes on, as a cold start
 * would; an interrupt stops start-up.
 *
 * <p>Hazard: the metrics the copy made are removed by identity, all of them that did not exist before
 * it started. Run it before the real process makes any meter — {@link Main#start} does — and never
 * beside another lastseat in the same JVM (the tests turn it off), whose meters it would share. A
 * thread of the copy still running after its close gave up waiting (a purchase past its drain) could
 * still make a meter after the removal, which the real process would then share.
 */
final class Warmup {
    private static final Logger LOG = Logger.getLogger(Warmup.class.getName());
    /** Buyers sent together: at a one-seat event (the cold burst) and at a larger one. */
    private static final int AT_ONCE = 40;
    /** How long the JIT compilers must have been idle for the warm-up to end before its bound. */
    private static final Duration QUIET = Duration.ofMillis(100);
    /** The most seats of the larger event: enough to sell to every buyer sent to it, quick to create. */
    private static final int LARGER_EVENT = 1000;
    /** The longest one request to the copy may take, whatever is left of the bound. */
    private static final Duration MOST_PER_REQUEST = Duration.ofSeconds(10);
    /**
     * The copy's {@code purchase.deadline}, unless the real one is longer or {@code warm-up.max-time}
     * shorter: the first round meets interpreted code on a machine that may be busy, and a purchase cut
     * off at 800 ms there leaves the payment and the confirmation it never reached cold (seen: a round of
     * 80 that sold nothing). Stopping the copy waits for its purchases up to their deadline, so the bound
     * caps it.
     */
    private static final Duration COPY_DEADLINE = Duration.ofSeconds(5);
    /**
     * Connections the stand-in's queue holds before it accepts them: two checks for each buyer of a round, and
     * as many again. The JDK's default (50) is less than one round's checks, and a connection the full queue
     * turns away is tried again a second later, past {@code outside.connect-timeout}: a check "unavailable"
     * in a copy whose stand-in answers at once.
     */
    private static final int STAND_IN_BACKLOG = 2 * 2 * (2 * AT_ONCE);
    private static final String LOOPBACK = "127.0.0.1";
    private static final Pattern ID = Pattern.compile("\"id\"\\s*:\\s*\"([^\"]+)\"");
    private static final Pattern KIND = Pattern.compile("\"type\"\\s*:\\s*\"" + Pattern.quote(Problem.TYPE_PREFIX) + "([^\"]+)\"");
    private static final Pattern DETAIL = Pattern.compile("\"detail\"\\s*:\\s*\"([^\"]*)\"");

    private Warmup() {
    }

    /**
     * What a warm-up did: requests sent, answers by status (with the problem's kind, as {@code 503 overloaded};
     * {@code no answer} for a request that timed out or failed), the first words of each 5xx and unanswered kind
     * ({@code why}: a copy whose stand-in answers at once has no 5xx of its own but shedding, so a log that has one
     * must say what it was), how long the copy took to start, the buying, and the JIT's catching up after it, where
     * the copy kept its data ({@link WarmupDatabase}); {@code failure} says why it stopped early, if it did.
     */
    record Done(int sent, Map<String, Integer> answers, Map<String, String> why, Duration started, Duration bought, Duration compiled,
                String database, Optional<String> failure) {
        @Override
        public String toString() {
            return "a throwaway copy started in " + started.toMillis() + " ms, " + sent + " purchase requests to it in " + bought.toMillis()
                   + " ms, answered " + answers + "; the JIT caught up " + compiled.toMillis() + " ms later; its database: " + database
                   + (why.isEmpty() ? "" : "; the first of each 5xx or unanswered: " + why)
                   + failure.map(reason -> "; stopped early: " + reason).orElse("");
        }
    }

    /**
     * Runs the warm-up and logs what it did: a warning when it failed or sold nothing. Throws only when
     * interrupted (the interrupt stays set): a process asked to stop while it starts does not go on.
     */
    static Done run(Config source, LastseatConfig config) {
        Done done = warmUp(source, config);
        if (done.failure().isPresent() || !done.answers().containsKey("201")) {
            LOG.warning("warm-up: " + done + " (lastseat starts anyway, as a cold start would)");
        } else {
            LOG.info("warm-up: " + done);
        }
        if (Thread.currentThread().isInterrupted()) {
            throw new IllegalStateException("interrupted while warming up; lastseat does not start");
        }
        return done;
    }

    private static Done warmUp(Config source, LastseatConfig config) {
        long start = System.nanoTime();
        long started = start;
        Buyers buyers = null;
        Map<String, Integer> answers = Map.of();
        long bought = start;
        long caughtUp = start;
        Set<Meter> before = meters();
        HttpServer standIn = null;
        ExecutorService standInThreads = Executors.newVirtualThreadPerTaskExecutor();
        Main.Running copy = null;
        WarmupDatabase database = null;
        Optional<String> failure = Optional.empty();
        try {
            standIn = HttpServer.create(new InetSocketAddress(InetAddress.getByName(LOOPBACK), 0), STAND_IN_BACKLOG);
            standIn.setExecutor(standInThreads);
            standIn(standIn, config);
            String operatorKey = ApiKeys.newKey();
            String standInUrl = "http://" + LOOPBACK + ":" + standIn.getAddress().getPort();
            database = WarmupDatabase.of(config.db(), config.warmUp());
            Map<String, String> settings = new HashMap<>(LastseatConfig.settings(source));
            source.get("server.max-payload-size").asString().ifPresent(cap -> settings.put("server.max-payload-size", cap));
            settings.putAll(Map.ofEntries(
                    Map.entry("server.port", "0"), Map.entry("server.host", LOOPBACK),
                    Map.entry("access.admin-port", "0"), Map.entry("access.admin-host", LOOPBACK),
                    Map.entry("db.url", database.url()), Map.entry("db.user", database.user()), Map.entry("db.password", database.password()),
                    Map.entry("outside.base-url", standInUrl),
                    Map.entry("purchase.deadline", copyDeadline(config).toMillis() + "ms"),
                    Map.entry("access.operator-key", operatorKey),
                    Map.entry("demo.create-event", "false"), Map.entry("demo.create-keys", "false"),
                    Map.entry("drills.enabled", "false"),
                    Map.entry("warm-up.purchases", "0")));
            Config copyConfig = Config.just(ConfigSources.create(settings));
            LastseatConfig checked = LastseatConfig.from(copyConfig);
            // The copy must be a copy: refused, rather than trusted, if a renamed key left the real one in place.
            if (!checked.db().url().equals(database.url()) || database.url().equals(config.db().url())
                || !checked.outside().baseUrl().equals(standInUrl)
                || !checked.access().adminHost().equals(LOOPBACK) || checked.warmUp().enabled()) {
                throw new IllegalStateException("the copy's configuration does not point at its own database and stand-in");
            }
            copy = Main.start(copyConfig);
            started = System.nanoTime();
            long until = started + config.warmUp().maxTime().toNanos();
            String clientKey = ((ApiKeys.Made.Created) copy.services().apiKeys().create("warm-up", Role.CLIENT, OptionalInt.empty())).key();
            buyers = new Buyers(URI.create("http://" + LOOPBACK + ":" + copy.port()), operatorKey, clientKey, until);
            answers = buyers.buy(config.warmUp().purchases(), config.events().maxCapacity());
            bought = System.nanoTime();
            compiled(until);
            caughtUp = System.nanoTime();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failure = Optional.of("interrupted");
        } catch (Exception e) {
            LOG.log(Level.WARNING, "warm-up failed", e);
            failure = Optional.of(String.valueOf(e));
        } finally {
            if (buyers != null && bought == start) {
                answers = buyers.answers();
                bought = System.nanoTime();
            }
            bought = Math.max(bought, started);
            caughtUp = Math.max(caughtUp, bought);
            quietly("stopping the warm-up's copy", copy);
            quietly("dropping the copy's database", database);
            if (standIn != null) {
                HttpServer server = standIn;
                quietly("stopping the warm-up's stand-in", () -> server.stop(0));
            }
            quietly("stopping the stand-in's threads", standInThreads);
            // Whatever happened above, the real process must not count what the copy did.
            Set<Meter> made = meters();
            made.removeAll(before);
            made.forEach(Metrics.globalRegistry()::remove);
        }
        return new Done(buyers == null ? 0 : buyers.sent(), new TreeMap<>(answers), buyers == null ? Map.of() : new TreeMap<>(buyers.why()),
                        Duration.ofNanos(started - start),
                        Duration.ofNanos(bought - started), Duration.ofNanos(caughtUp - bought),
                        database == null ? "none" : database.toString(), failure);
    }

    /** {@link #COPY_DEADLINE}, at most {@code warm-up.max-time}, and never shorter than the real deadline. */
    private static Duration copyDeadline(LastseatConfig config) {
        Duration bounded = COPY_DEADLINE.compareTo(config.warmUp().maxTime()) <= 0 ? COPY_DEADLINE : config.warmUp().maxTime();
        Duration real = config.purchase().deadline();
        return real.compareTo(bounded) >= 0 ? real : bounded;
    }

    private static void quietly(String what, AutoCloseable closeable) {
        if (closeable == null) {
            return;
        }
        try {
            closeable.close();
        } catch (Exception e) {
            LOG.log(Level.WARNING, what + " failed", e);
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

    private static Set<Meter> meters() {
        Set<Meter> meters = Collections.newSetFromMap(new IdentityHashMap<>());
        Metrics.globalRegistry().meters().forEach(meters::add);
        return meters;
    }

    /** What the stand-in answers on one path. */
    private record Canned(int status, String json) {
    }

    /** The outside services as the copy sees them: answering at once, every charge captured. */
    private static void standIn(HttpServer server, LastseatConfig config) {
        // Nothing forbids two services one path; the first answers it (the stand-in allows one context per path).
        Map<String, Canned> answers = new LinkedHashMap<>();
        answers.putIfAbsent(config.checks().fraudPath(), new Canned(200, "{\"decision\":\"approve\"}"));
        answers.putIfAbsent(config.checks().taxPath(), new Canned(200, "{\"tax\":\"0.00\",\"currency\":\"EUR\"}"));
        answers.putIfAbsent(config.payment().path(), new Canned(201, "{\"id\":\"pay_warm_up\",\"status\":\"captured\"}"));
        answers.putIfAbsent(config.outbox().emailPath(), new Canned(202, "{}"));
        answers.putIfAbsent(config.outbox().refundPath(), new Canned(201, "{}"));
        answers.forEach((path, canned) -> answer(server, path, canned));
        server.start();
    }

    private static void answer(HttpServer server, String path, Canned canned) {
        int status = canned.status();
        byte[] body = canned.json().getBytes(StandardCharsets.UTF_8);
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

    /** {@code warm-up.max-time} has passed: the next request is not sent. */
    private static final class BoundPassed extends IOException {
        BoundPassed() {
            super("warm-up.max-time has passed", null);
        }
    }

    /**
     * Buyers of the copy: rounds of {@link #AT_ONCE} at a one-seat event and as many at a larger one,
     * each round on new connections, until the purchases are sent or {@code until} (a {@link System#nanoTime}
     * reading) has passed; no request outlives {@code until}.
     */
    private static final class Buyers {
        private final URI copy;
        private final String operatorKey;
        private final String clientKey;
        private final long until;
        private final AtomicInteger sent = new AtomicInteger();
        private final Map<String, Integer> answers = new ConcurrentHashMap<>();
        private final Map<String, String> why = new ConcurrentHashMap<>();

        Buyers(URI copy, String operatorKey, String clientKey, long until) {
            this.copy = copy;
            this.operatorKey = operatorKey;
            this.clientKey = clientKey;
            this.until = until;
        }

        int sent() {
            return sent.get();
        }

        Map<String, Integer> answers() {
            return Map.copyOf(answers);
        }

        /** The detail of the first answer of each 5xx kind, and what the first request left unanswered met. */
        Map<String, String> why() {
            return Map.copyOf(why);
        }

        /**
         * Sends up to {@code purchases} purchase requests; what is left when the bound passes is not sent.
         * Half go to the larger event, which has a seat for each of them (at most {@link #LARGER_EVENT}).
         */
        Map<String, Integer> buy(int purchases, int maxCapacity) throws IOException, InterruptedException {
            try (HttpClient admin = HttpClient.newHttpClient()) {
                int submitted = 0;
                String larger = event(admin, Math.min(purchases / 2 + 1, Math.min(maxCapacity, LARGER_EVENT)));
                while (submitted < purchases && left().isPositive()) {
                    String lastSeat = event(admin, 1);
                    try (HttpClient round = HttpClient.newHttpClient();
                         ExecutorService buyers = Executors.newVirtualThreadPerTaskExecutor()) {
                        List<Future<?>> running = new ArrayList<>();
                        for (int i = 0; i < 2 * AT_ONCE && submitted < purchases; i++, submitted++) {
                            String event = i % 2 == 0 ? lastSeat : larger;
                            running.add(buyers.submit(() -> purchase(round, event)));
                        }
                        for (Future<?> one : running) {
                            try {
                                one.get();
                            } catch (ExecutionException e) {
                                // Sent and not answered in time, or not answered at all; the buying goes on.
                                if (!(e.getCause() instanceof BoundPassed)) {
                                    answers.merge("no answer", 1, Integer::sum);
                                    why.putIfAbsent("no answer", String.valueOf(e.getCause()));
                                }
                            }
                        }
                    }
                }
            } catch (BoundPassed stop) {
                // Between two requests: what was sent stands.
            }
            return answers();
        }

        /** What is left of the bound, at most {@link #MOST_PER_REQUEST}: every request's timeout. */
        private Duration left() {
            Duration left = Duration.ofNanos(until - System.nanoTime());
            return left.compareTo(MOST_PER_REQUEST) > 0 ? MOST_PER_REQUEST : left;
        }

        private String event(HttpClient http, int capacity) throws IOException, InterruptedException {
            HttpResponse<String> created = sendWithin(() -> http.send(request("/events", operatorKey)
                    .POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"warm-up\",\"capacity\":" + capacity
                                                              + ",\"price\":\"10.00\",\"currency\":\"EUR\"}")).build(),
                    HttpResponse.BodyHandlers.ofString()));
            Matcher id = ID.matcher(created.body());
            if (created.statusCode() != 201 || !id.find()) {
                throw new IllegalStateException("the throwaway copy did not create an event: " + created.statusCode());
            }
            return id.group(1);
        }

        private Void purchase(HttpClient http, String event) throws IOException, InterruptedException {
            String buyer = UUID.randomUUID().toString();
            HttpRequest request = request("/purchases", clientKey).header("Idempotency-Key", buyer)
                    .POST(HttpRequest.BodyPublishers.ofString("{\"eventId\":\"" + event + "\",\"quantity\":1,\"buyer\":{\"id\":\"" + buyer
                                                              + "\",\"email\":\"warm-up@lastseat.invalid\"},\"paymentToken\":\"tok_warm_up\"}"))
                    .build();
            sent.incrementAndGet();
            HttpResponse<String> answer = sendWithin(() -> http.send(request, HttpResponse.BodyHandlers.ofString()));
            // The kind tells a copy that shed load (503 overloaded) from one whose stand-in or database failed.
            Matcher kind = KIND.matcher(answer.body());
            String answered = answer.statusCode() + (kind.find() ? " " + kind.group(1) : "");
            answers.merge(answered, 1, Integer::sum);
            Matcher detail = DETAIL.matcher(answer.body());
            if (answer.statusCode() >= 500 && detail.find()) {
                why.putIfAbsent(answered, detail.group(1));
            }
            return null;
        }

        /** An exchange that could not happen in time for the bound (a connection on a busy machine, say). */
        @FunctionalInterface
        private interface Exchange<T> {
            HttpResponse<T> send() throws IOException, InterruptedException;
        }

        /**
         * {@code exchange}, whose timeout is what was left of the bound: timing out once nothing is left
         * is the bound ending the buying ({@link BoundPassed}), not a failure.
         */
        private <T> HttpResponse<T> sendWithin(Exchange<T> exchange) throws IOException, InterruptedException {
            try {
                return exchange.send();
            } catch (java.net.http.HttpTimeoutException e) {
                if (!left().isPositive()) {
                    throw new BoundPassed();
                }
                throw e;
            }
        }

        /** A request that times out at what is left of the bound; {@link BoundPassed} when nothing is. */
        private HttpRequest.Builder request(String path, String key) throws BoundPassed {
            Duration left = left();
            if (!left.isPositive()) {
                throw new BoundPassed();
            }
            return HttpRequest.newBuilder(copy.resolve(path)).timeout(left)
                    .header("Authorization", "Bearer " + key).header("Content-Type", "application/json");
        }
    }
}
