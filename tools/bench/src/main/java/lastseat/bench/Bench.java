package lastseat.bench;

import lastseat.testkit.Answer;
import lastseat.testkit.Instance;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.NewConnection;
import lastseat.testkit.ServerProcess;
import lastseat.testkit.StubsClient;
import lastseat.testkit.TempDirs;
import lastseat.testkit.Together;
import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder;
import lastseat.testkit.InFlight;
import lastseat.testkit.Ledger;
import lastseat.testkit.LedgerAdmin;
import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;
import java.util.stream.Collectors;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.wireMockConfig;

/**
 * bin/bench: lastseat in a process of its own (one per scenario, settings of its own) against
 * WireMock stubs with fixed delays, driven by an open-model load generator on virtual threads.
 * Latency is measured from each request's <em>intended</em> start, so a stalled server cannot hide
 * its stall by slowing the generator down (no coordinated omission). Prints a table of figures
 * and their ratios to the limit each one is compared with. {@code --smoke} runs every scenario
 * tiny (bin/test does, to keep this working; no figure is asserted); {@code --postgres} adds the
 * on-sale's two instances on one PostgreSQL ({@link OnSale}).
 */
public final class Bench {
    final boolean smoke;
    private final boolean postgres;
    private final WireMockServer stubs;
    /**
     * One JDK client for the whole run, pointed at each scenario's server with {@code on(server.instance())};
     * a purchase may wait for a minute before the load generator counts it as failed.
     */
    final LastseatClient lastseat = new LastseatClient(Instance.local(1, 1), LastseatClient.CONNECT_TIMEOUT,
                                                               Duration.ofSeconds(60));
    private final List<Row> rows = new ArrayList<>();
    /** The servers' data directories: an on-sale's H2 file alone is about 430 MB, so they go when the run has ended well. */
    private final List<Path> dataDirs = new CopyOnWriteArrayList<>();

    /** One line of the table: a figure, the limit it is compared with, and their ratio. */
    record Row(String figure, String value, String limit, String ratio) {
    }

    private Bench(boolean smoke, boolean postgres) {
        this.smoke = smoke;
        this.postgres = postgres;
        this.stubs = new WireMockServer(wireMockConfig().dynamicPort().bindAddress("127.0.0.1")
                .usingFilesUnderDirectory("wiremock").containerThreads(500).jettyAcceptQueueSize(5000)
                .asynchronousResponseEnabled(true).asynchronousResponseThreads(200)
                .disableRequestJournal()
                .extensions(new Ledger(), new InFlight(), new LedgerAdmin()));
    }

    public static void main(String[] args) throws Exception {
        List<String> only = new ArrayList<>();
        boolean smoke = false;
        boolean postgres = false;
        for (String arg : args) {
            switch (arg) {
                case "--smoke" -> smoke = true;
                case "--postgres" -> postgres = true;
                default -> only.add(arg);
            }
        }
        System.out.println(run(smoke, postgres, only));
        System.exit(0);
    }

    /** Runs the scenarios ({@code only} empty: all) and returns the table. */
    public static String run(boolean smoke, List<String> only) throws Exception {
        return run(smoke, false, only);
    }

    /** {@link #run(boolean, List)}, with the on-sale's PostgreSQL part when {@code postgres} (and PostgreSQL answers). */
    public static String run(boolean smoke, boolean postgres, List<String> only) throws Exception {
        Bench bench = new Bench(smoke, postgres);
        bench.stubs.start();
        boolean ran = false;
        try {
            Map<String, Scenario> scenarios = new LinkedHashMap<>();
            scenarios.put("latency", bench::latency);
            scenarios.put("overload", bench::overload);
            scenarios.put("hot-event", bench::hotEvent);
            scenarios.put("databases", bench::databases);
            scenarios.put("memory", bench::memory);
            scenarios.put("disk", bench::disk);
            scenarios.put("outbox", bench::outbox);
            scenarios.put("onsale", () -> new OnSale(bench, bench.postgres).run());
            // The on-sale's steady phase alone (a minute), to compare a change's CPU; onsale has it already.
            scenarios.put("steady", () -> new OnSale(bench, false).steadyAlone());
            // The on-sale's two instances on PostgreSQL alone (about a minute), to compare a change; onsale --postgres has it.
            scenarios.put("onsale-pg", () -> new OnSale(bench, true).twoInstancesAlone());
            // bin/train's load for JDK 25's AOT cache, not a benchmark: its own stubs and rates, no figures.
            scenarios.put("train", () -> new OnSale(bench, false).train());
            for (var scenario : scenarios.entrySet()) {
                boolean named = only.contains(scenario.getKey());
                if (named || only.isEmpty() && !List.of("steady", "onsale-pg", "train").contains(scenario.getKey())) {
                    System.out.println("-- " + scenario.getKey());
                    scenario.getValue().run();
                }
            }
            ran = true;
        } finally {
            bench.lastseat.close();
            bench.stubs.stop();
            bench.removeDataDirs(ran);
        }
        return bench.table();
    }

    private interface Scenario {
        void run() throws Exception;
    }

    // --- the scenarios ---

    /**
     * p50/p99 at 200 buyers in flight, fraud 100 ms, tax 150 ms, payment 200 ms. (The comparison with the
     * checks one after the other was measured once and removed with the product's sequential mode:
     * docs/BENCHMARKS.md.)
     */
    private void latency() throws Exception {
        stub(100, 150, 200);
        double rate = smoke ? 20 : 200 / 0.35;
        Duration length = seconds(smoke ? 1 : 5);
        Map<String, String> settings = Map.of("payment.permits", "1000", "purchase.max-in-flight", "5000");
        // At a pace this machine sustains (about 15 in flight), the figures show the path itself.
        double easy = smoke ? 10 : 40;
        Histogram calmParallel = latencyRun(settings, easy, length, "parallel at " + (int) easy + "/s");
        add("p50 purchase latency at " + (int) easy + "/s, checks side by side", ms(calmParallel.getValueAtPercentile(50)),
            "critical path 350 ms", ratio(calmParallel.getValueAtPercentile(50) / 1000.0 / 350));
        add("p99 purchase latency at " + (int) easy + "/s, checks side by side", ms(calmParallel.getValueAtPercentile(99)),
            "critical path 350 ms", ratio(calmParallel.getValueAtPercentile(99) / 1000.0 / 350));
        Histogram parallel = latencyRun(settings, rate, length, "parallel");
        double path = 350;
        add("p50 purchase latency, 200 in flight, checks side by side", ms(parallel.getValueAtPercentile(50)), "critical path 350 ms",
            ratio(parallel.getValueAtPercentile(50) / 1000.0 / path));
        add("p99 purchase latency, same run", ms(parallel.getValueAtPercentile(99)), "critical path 350 ms",
            ratio(parallel.getValueAtPercentile(99) / 1000.0 / path));
    }

    private Histogram latencyRun(Map<String, String> settings, double rate, Duration length, String label) throws Exception {
        try (ServerProcess server = server(label, settings)) {
            String event = newEvent(server, 10_000);
            warmUp(server);
            Load load = open(rate, length, i -> purchase(server, event));
            System.out.println("   " + label + ": " + load);
            return load.latency(201);
        }
    }

    /** Arrivals above the bulkhead's ceiling: 20 permits, payment 200 ms → at most 100 purchases/s. */
    private void overload() throws Exception {
        stub(0, 0, 200);
        double rate = smoke ? 20 : 160;
        Duration length = seconds(smoke ? 1 : 10);
        try (ServerProcess server = server("overload", Map.of())) {
            String event = newEvent(server, 10_000);
            warmUp(server);
            Load load;
            int most;
            try (StubsClient admin = stubsAdmin()) {
                admin.clearLedger();
                load = open(rate, length, i -> purchase(server, event));
                most = admin.ledger().path("maxPaymentsInFlight").asInt();
            }
            System.out.println("   " + load);
            double confirmedPerSecond = load.count(201) / load.seconds();
            add("confirmed purchases/s, arrivals " + (int) rate + "/s, payment 200 ms", String.format(Locale.ROOT, "%.1f/s", confirmedPerSecond),
                "Little's law: 20 permits / 0.2 s = 100/s", ratio(confirmedPerSecond / 100));
            add("most payment calls the provider saw at once (with calls given up at the deadline)", Integer.toString(most),
                "20 permits", ratio(most / 20.0));
        }
    }

    /**
     * 10,000 buyers for 1,000 seats, stubs 0 ms, 64 buying at any moment (each next buyer arrives as one
     * is answered: the sell-out is about the database's pace, not about latency under a fixed rate).
     */
    private void hotEvent() throws Exception {
        stub(0, 0, 0);
        int buyers = smoke ? 100 : 10_000;
        int seats = buyers / 10;
        int atOnce = 64;
        Path dir = dataDir("hot");
        Load load;
        try (ServerProcess server = start(dir, Map.of("payment.permits", "1000"))) {
            String event = newEvent(server, seats);
            warmUp(server);
            load = closedLoad(atOnce, buyers, i -> purchase(server, event));
            System.out.println("   " + load);
        }
        double soldOutSeconds = load.secondsUntil(201, seats);
        double claimsPerSecond = load.total() / load.seconds();
        RawClaims.Rounds rounds = smoke ? RawClaims.Rounds.SMOKE : RawClaims.Rounds.FULL;
        double raw = RawClaims.measure(dir.resolve("lastseat"), smoke ? 2_000 : 20_000, rounds);
        add("hot event: confirmations of " + seats + " seats by " + buyers + " buyers", Integer.toString(load.count(201)),
            "exactly " + seats, ratio(load.count(201) / (double) seats));
        add("hot event: time to the last confirmation", String.format(Locale.ROOT, "%.2f s", soldOutSeconds), atOnce + " buyers at a time", "");
        add("hot event: purchases answered/s (claims through HTTP)", String.format(Locale.ROOT, "%.0f/s", claimsPerSecond),
            String.format(Locale.ROOT, "raw JDBC conditional claims %.0f/s, warm (the median of %d rounds after %d untimed)", raw,
                          rounds.measured(), rounds.warmUp()), ratio(claimsPerSecond / raw));
    }

    /** Confirmed purchases per second with {@code buyers} buying at once (each buys again as soon as answered). */
    private double throughput(Map<String, String> settings, int buyers, int purchases, String label) throws Exception {
        try (ServerProcess server = server(label, settings)) {
            String event = newEvent(server, Math.max(purchases, 1));
            warmUp(server);
            long start = System.nanoTime();
            List<Integer> statuses = closed(buyers, purchases, i -> purchase(server, event).status());
            double seconds = (System.nanoTime() - start) / 1e9;
            long ok = statuses.stream().filter(s -> s == 201).count();
            System.out.printf(Locale.ROOT, "   %s: %d of %d confirmed in %.2f s%n", label, ok, purchases, seconds);
            return ok / seconds;
        }
    }

    /** The reserve + confirm path (stubs 0 ms) on H2 file, H2 in memory and PostgreSQL. */
    private void databases() throws Exception {
        stub(0, 0, 0);
        int n = smoke ? 50 : 1500;
        Map<String, Double> rates = new LinkedHashMap<>();
        rates.put("H2 file", throughput(Map.of(), 32, n, "h2-file"));
        rates.put("H2 memory", throughput(Map.of("db.url", "jdbc:h2:mem:bench;DB_CLOSE_DELAY=-1"), 32, n, "h2-mem"));
        String pg = PostgresBench.freshDatabase();
        if (pg != null) {
            try {
                rates.put("PostgreSQL", throughput(Map.of("db.url", pg, "db.user", "postgres"), 32, n, "postgres"));
            } finally {
                PostgresBench.drop(pg);
            }
        }
        double file = rates.get("H2 file");
        rates.forEach((name, rate) -> add("reserve + confirm, " + name + ", 32 buyers at a time", String.format(Locale.ROOT, "%.0f/s", rate),
                                          "H2 file", ratio(rate / file)));
    }

    /**
     * What the default H2 file keeps per confirmed purchase after 100,000 of them (stubs 0 ms, 32 buyers at
     * a time, events of 10,000 seats), against the 4 KB issue 11 asks; then the first tenth again with the
     * file only appended ({@code db.h2-housekeeping-interval=0s}, as before space was reused), for what the
     * housekeeping costs in purchases per second.
     */
    private void disk() throws Exception {
        stub(0, 0, 0);
        int n = smoke ? 200 : 100_000;
        Disk reused = disk("disk", Map.of(), n);
        Disk appended = disk("disk-appended", Map.of("db.h2-housekeeping-interval", "0s"), n / 10);
        add("H2 file kept per confirmed purchase, after " + reused.confirmed() + " purchases",
            kb(reused.bytesAfter() / (double) reused.confirmed()), "4 KB", ratio(reused.bytesAfter() / (double) reused.confirmed() / 4096));
        add("H2 file's largest size while they were made, per purchase", kb(reused.peakBytes() / (double) reused.confirmed()), "4 KB",
            ratio(reused.peakBytes() / (double) reused.confirmed() / 4096));
        add("same, the file only appended (db.h2-housekeeping-interval=0s), " + appended.confirmed() + " purchases",
            kb(appended.bytesAfter() / (double) appended.confirmed()), "4 KB", ratio(appended.bytesAfter() / (double) appended.confirmed() / 4096));
        add("confirmed/s over the first " + appended.confirmed() + " purchases, space reused",
            String.format(Locale.ROOT, "%.0f/s", reused.firstTenthPerSecond()), "only appended: "
            + String.format(Locale.ROOT, "%.0f/s", appended.firstTenthPerSecond()), ratio(reused.firstTenthPerSecond() / appended.firstTenthPerSecond()));
    }

    /**
     * How fast the outbox sends an on-sale's confirmation emails, against how fast the purchases confirm: 32
     * buyers at a time buy as fast as the stubs (0 ms) let them, with the email receiver answering at once and
     * after 50 ms (a real email API takes tens to hundreds of ms); then the wait until the last email is sent.
     */
    private void outbox() throws Exception {
        int n = smoke ? 200 : 4_000;
        for (int emailMillis : List.of(0, 50)) {
            stub(0, 0, 0);
            stubs.stubFor(post(urlPathEqualTo("/emails")).atPriority(1)
                    .willReturn(delayed(aResponse().withStatus(202).withTransformers("ledger"), emailMillis)));
            try (ServerProcess server = server("outbox-" + emailMillis, Map.of())) {
                warmUp(server);
                OnSale settling = new OnSale(this, false);
                OnSale.Settled warm = settling.settle(server);
                String event = newEvent(server, n);
                long start = System.nanoTime();
                List<String> kinds = closed(32, n, i -> kind(purchase(server, event)));
                double buying = (System.nanoTime() - start) / 1e9;
                int confirmed = (int) kinds.stream().filter("201"::equals).count();
                int waiting = lastseat.on(server.instance()).outbox("pending").path("count").asInt();
                OnSale.Settled settled = settling.settle(server);
                double sending = (System.nanoTime() - start) / 1e9;
                double confirmedPerSecond = confirmed / buying;
                // A queue not emptied within the settling bound is counted by what was sent meanwhile.
                double sentPerSecond = (confirmed - settled.pending()) / sending;
                System.out.printf(Locale.ROOT, "   outbox, receiver %d ms: %d of %d confirmed in %.1f s (%.0f/s); %d emails waiting then; "
                                  + "the last sent %.1f s after the first purchase (%s); warm-up's emails %s%n", emailMillis, confirmed, n,
                                  buying, confirmedPerSecond, waiting, sending, settled, warm);
                String figure = "outbox: emails sent/s while " + confirmed + " purchases confirm, receiver " + emailMillis + " ms";
                add(figure, String.format(Locale.ROOT, "%.0f/s", sentPerSecond) + (settled.done() ? "" : " (not all sent)"),
                    String.format(Locale.ROOT, "the purchases' %.0f/s", confirmedPerSecond), ratio(sentPerSecond / confirmedPerSecond));
                add("outbox: emails waiting when the last of them was answered, receiver " + emailMillis + " ms",
                    Integer.toString(waiting), "", "");
            }
        }
    }

    /** One disk run: confirmed purchases, the file's size at the end and at its largest, the rate over the first tenth. */
    private record Disk(int confirmed, long bytesAfter, long peakBytes, double firstTenthPerSecond) {
    }

    private Disk disk(String label, Map<String, String> settings, int n) throws Exception {
        Path dir = dataDir(label);
        Path file = dir.resolve("lastseat.mv.db");
        int perEvent = Math.min(n, 10_000);
        try (ServerProcess server = start(dir, settings)) {
            warmUp(server);
            int confirmed = 0;
            long peak = 0;
            double firstTenth = Double.NaN;
            long start = System.nanoTime();
            for (int done = 0; done < n; done += perEvent) {
                String event = newEvent(server, perEvent);
                List<String> kinds = closed(32, perEvent, i -> kind(purchase(server, event)));
                confirmed += (int) kinds.stream().filter("201"::equals).count();
                long size = Files.size(file);
                peak = Math.max(peak, size);
                if (Double.isNaN(firstTenth) && done + perEvent >= n / 10) {
                    firstTenth = confirmed / ((System.nanoTime() - start) / 1e9);
                }
                // The other answers by kind: a soak that slows the file shows here first, as deadlines missed.
                Map<String, Long> others = byKind(kinds.stream().filter(kind -> !"201".equals(kind)).toList());
                System.out.printf(Locale.ROOT, "   %s: %d of %d confirmed, file %s, %.0f s in%s%n", label, confirmed, done + perEvent,
                                  mb(size), (System.nanoTime() - start) / 1e9, others.isEmpty() ? "" : ", others " + others);
            }
            // Not settled: the outbox sends more slowly than purchases confirm here, and its queue would take minutes.
            Thread.sleep(Duration.ofSeconds(2));
            long after = Files.size(file);
            System.out.printf(Locale.ROOT, "   %s: file %s, %s at its largest%n", label, mb(after), mb(peak));
            return new Disk(confirmed, after, Math.max(peak, after), firstTenth);
        }
    }

    private static String kb(double bytes) {
        return String.format(Locale.ROOT, "%.1f KB", bytes / 1024);
    }

    /** Heap and RSS of the server with 1,000 purchases waiting on a 20 s payment, against the same server idle. */
    private void memory() throws Exception {
        // Payments answer after 20 s (after a warm-up at 0 ms): 1,000 buyers on new connections take a
        // few seconds to all arrive on two busy cores, and the read must come when every one of them waits
        // on its payment (the provider's own count says so), well inside the 28 s deadline.
        stub(0, 0, 0);
        int inFlight = smoke ? 50 : 1000;
        try (ServerProcess server = server("memory", Map.of("payment.permits", "1000", "purchase.max-in-flight", "5000",
                                                             "purchase.deadline", "28s", "payment.max-wait", "28s",
                                                             "outside.call-timeout", "30s", "db.connection-timeout", "20s"));
             StubsClient admin = stubsAdmin()) {
            String event = newEvent(server, inFlight);
            warmUp(server);
            stub(0, 0, smoke ? 3_000 : 20_000);
            long heapIdle = heapUsed(server, true);
            long rssIdle = rss(server);
            admin.clearLedger();
            List<String> kinds = new CopyOnWriteArrayList<>();
            Thread load = Thread.ofVirtual().start(() -> kinds.addAll(closed(inFlight, inFlight, i -> kind(purchase(server, event)))));
            long until = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            int waiting = 0;
            while (System.nanoTime() < until && (waiting = admin.ledger().path("paymentsInFlight").asInt()) < inFlight) {
                Thread.sleep(100);
            }
            System.out.println("   payments waiting at the provider when read: " + waiting + " of " + inFlight);
            // Per purchase that was waiting: a run that could not bring them all in says so on its rows.
            int held = Math.max(1, waiting);
            String shortOf = waiting < inFlight ? " (only " + waiting + " of " + inFlight + " waiting)" : "";
            // Heap in use counts the garbage of the last GC cycle too; after a full GC, with every
            // purchase still waiting on its payment, what is left is what the purchases hold.
            long heapBusy = heapUsed(server, false);
            long heapHeld = heapUsed(server, true);
            if (System.getenv("BENCH_HISTO") != null) {
                jcmd(server, "GC.class_histogram", ProcessBuilder.Redirect.to(new java.io.File(System.getenv("BENCH_HISTO"))));
            }
            long rssBusy = rss(server);
            load.join(Duration.ofSeconds(40));
            System.out.println("   answers: " + byKind(kinds));
            // What the server spends doing nothing once they are answered and their emails sent: the
            // connections it keeps to the outside services are watched while idle (outside.max-idle-connections).
            OnSale.Settled settled = new OnSale(this, false).settle(server);
            double before = OnSale.ProcessCpu.millis(server.pid());
            Duration idle = Duration.ofSeconds(smoke ? 1 : 10);
            Thread.sleep(idle);
            double idleCpu = (OnSale.ProcessCpu.millis(server.pid()) - before) / idle.toMillis() * 1000;
            add("heap held per 1,000 in-flight purchases (after a full GC)", mb((heapHeld - heapIdle) * 1000 / held) + shortOf,
                "idle " + mb(heapIdle), "");
            add("heap in use per 1,000 in-flight purchases (garbage included)", mb((heapBusy - heapIdle) * 1000 / held) + shortOf,
                "idle " + mb(heapIdle), "");
            add("RSS per 1,000 in-flight purchases", mb((rssBusy - rssIdle) * 1000 / held) + shortOf, "idle " + mb(rssIdle), "");
            add("CPU of the idle server after them, for " + idle.toSeconds() + " s once their emails were sent",
                String.format(Locale.ROOT, "%.0f ms per s", idleCpu) + (settled.done() ? "" : " (not settled)"), "", "");
        }
    }

    /** An answer's status, with its problem's kind when it is not 201. */
    private static String kind(lastseat.testkit.Answer answer) {
        return answer.status() == 201 ? "201" : answer.status() + " " + answer.type();
    }

    /** How many answers of each {@link #kind}, in the kinds' order. */
    private static Map<String, Long> byKind(java.util.Collection<String> kinds) {
        return kinds.stream().collect(Collectors.groupingBy(kind -> kind, TreeMap::new, Collectors.counting()));
    }

    // --- the load generator ---

    /** The answers of one run, each with its intended start and its end, on one clock. */
    static final class Load {
        /** One answer as the server gave it (or a failed exchange as 599/598), when it was due and when it came. */
        record Answer(long intended, long end, lastseat.testkit.Answer answer) {
            int status() {
                return answer.status();
            }
        }

        final List<Answer> answers;
        final long start;
        final long end;

        Load(List<Answer> answers, long start, long end) {
            this.answers = answers;
            this.start = start;
            this.end = end;
        }

        int total() {
            return answers.size();
        }

        int count(int status) {
            return (int) answers.stream().filter(a -> a.status() == status).count();
        }

        double seconds() {
            return (end - start) / 1e9;
        }

        /** Seconds from the first arrival until the {@code n}th answer with {@code status} (or the last one, if fewer came). */
        double secondsUntil(int status, int n) {
            List<Long> ends = answers.stream().filter(a -> a.status() == status).map(Answer::end).sorted().toList();
            return ends.isEmpty() ? Double.NaN : (ends.get(Math.min(n, ends.size()) - 1) - start) / 1e9;
        }

        /** Latencies in microseconds of the answers with {@code status}, from intended start to end. */
        Histogram latency(int status) {
            Histogram histogram = new Histogram(TimeUnit.MINUTES.toMicros(5), 3);
            answers.stream().filter(a -> a.status() == status)
                    .forEach(a -> histogram.recordValue(Math.max(0, (a.end() - a.intended()) / 1000)));
            return histogram;
        }

        @Override
        public String toString() {
            Map<Integer, Integer> statuses = new java.util.TreeMap<>();
            answers.forEach(a -> statuses.merge(a.status(), 1, Integer::sum));
            Histogram all = new Histogram(TimeUnit.MINUTES.toMicros(5), 3);
            answers.forEach(a -> all.recordValue(Math.max(0, (a.end() - a.intended()) / 1000)));
            return String.format(Locale.ROOT, "%d answers in %.2f s %s; p50 %s p99 %s max %s", total(), seconds(), statuses,
                                 ms(all.getValueAtPercentile(50)), ms(all.getValueAtPercentile(99)), ms(all.getMaxValue()));
        }
    }

    /** Requests arrive at {@code rate} per second for {@code length}, each on its own virtual thread, whatever the answers do. */
    static Load open(double rate, Duration length, IntFunction<Answer> request) throws InterruptedException {
        ConcurrentLinkedQueue<Load.Answer> answers = new ConcurrentLinkedQueue<>();
        long interval = (long) (1e9 / rate);
        long count = Math.max(1, length.toNanos() / interval);
        long start = System.nanoTime();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < count; i++) {
                long intended = start + i * interval;
                long wait = intended - System.nanoTime();
                if (wait > 0) {
                    LockSupport.parkNanos(wait);
                }
                int index = i;
                threads.submit(() -> {
                    Answer answer = request.apply(index);
                    answers.add(new Load.Answer(intended, System.nanoTime(), answer));
                });
            }
            threads.shutdown();
            if (!threads.awaitTermination(2, TimeUnit.MINUTES)) {
                throw new IllegalStateException("requests still unanswered two minutes after the last arrival");
            }
        }
        return new Load(new ArrayList<>(answers), start, answers.stream().mapToLong(Load.Answer::end).max().orElse(start));
    }

    /** {@link #closed} keeping every answer's time, for the hot event's sell-out. */
    static Load closedLoad(int concurrency, int n, IntFunction<Answer> request) {
        ConcurrentLinkedQueue<Load.Answer> answers = new ConcurrentLinkedQueue<>();
        long start = System.nanoTime();
        closed(concurrency, n, i -> {
            long began = System.nanoTime();
            Answer answer = request.apply(i);
            answers.add(new Load.Answer(began, System.nanoTime(), answer));
            return answer.status();
        });
        return new Load(new ArrayList<>(answers), start, answers.stream().mapToLong(Load.Answer::end).max().orElse(start));
    }

    /** {@code n} requests, {@code concurrency} at a time: {@link Together#atMost}, bounded by ten minutes. */
    static <T> List<T> closed(int concurrency, int n, IntFunction<T> request) {
        try {
            return Together.atMost(concurrency, n, request, Duration.ofMinutes(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    // --- plumbing ---

    /** One purchase of any one seat through the shared client; see {@link #purchase(LastseatClient, String, String)}. */
    Answer purchase(ServerProcess server, String event) {
        return purchase(lastseat.on(server.instance()), event, "bench");
    }

    /** One purchase of any one seat; a failed exchange is an answer too (599, or 598 when interrupted), counted by its status. */
    static Answer purchase(LastseatClient client, String event, String buyer) {
        return counted(() -> client.purchaseQuantity(UUID.randomUUID().toString(), event, 1, buyer));
    }

    /**
     * {@link #purchase(LastseatClient, String, String)} on a TCP connection of its own ({@link NewConnection}), as a buyer
     * from another machine arrives, without a JDK client's threads on the server's cores; answered within {@code timeout}.
     */
    static Answer purchaseOnNewConnection(Instance instance, String event, String buyer, Duration timeout) {
        return counted(() -> NewConnection.exchange(instance.api(), "POST", "/purchases",
                                                    Map.of("Content-Type", "application/json",
                                                           "Authorization", "Bearer " + instance.clientKey(),
                                                           "Idempotency-Key", UUID.randomUUID().toString()),
                                                    LastseatClient.quantityBody(event, 1, buyer).getBytes(StandardCharsets.UTF_8), timeout));
    }

    private static Answer counted(java.util.function.Supplier<Answer> exchange) {
        try {
            return exchange.get();
        } catch (UncheckedIOException e) {
            return failed(599, String.valueOf(e.getCause()));
        } catch (IllegalStateException e) {
            if (!Thread.currentThread().isInterrupted()) {
                throw e;
            }
            return failed(598, "interrupted");
        }
    }

    private static Answer failed(int status, String why) {
        return new Answer(status, Map.of(), why.getBytes(StandardCharsets.UTF_8), 0);
    }

    private void warmUp(ServerProcess server) {
        String event = newEvent(server, 200);
        closed(20, smoke ? 20 : 200, i -> purchase(server, event).status());
    }

    String newEvent(ServerProcess server, int capacity) {
        return lastseat.on(server.instance()).newEvent(capacity);
    }

    ServerProcess server(String label, Map<String, String> settings) throws IOException {
        return start(dataDir(label), settings);
    }

    /**
     * A lastseat on {@code dir} with {@code settings}. A smoke run starts it without the warm-up's copy: its
     * figures mean nothing, the copy took four of the five seconds of each of its dozen starts, and
     * {@code WarmupTest} is the warm-up's own.
     */
    ServerProcess start(Path dir, Map<String, String> settings) {
        return start(dir, settings, List.of());
    }

    /** {@link #start(Path, Map)} with JVM options of its own. */
    ServerProcess start(Path dir, Map<String, String> settings, List<String> jvmOptions) {
        Map<String, String> all = new HashMap<>(settings);
        if (smoke) {
            all.putIfAbsent("warm-up.purchases", "0");
        }
        return ServerProcess.start(dir, stubsUri(), all, jvmOptions);
    }

    /** A new directory for a server's files, removed at the end of the run (kept with {@code BENCH_KEEP_DATA=1}). */
    Path dataDir(String label) throws IOException {
        Path dir = Files.createTempDirectory("lastseat-bench-" + label.replaceAll("[^A-Za-z0-9-]", "-"));
        dataDirs.add(dir);
        return dir;
    }

    /** Called once every server of the run has stopped; a run that failed keeps them, with the servers' logs. */
    private void removeDataDirs(boolean ran) {
        if (!ran || System.getenv("BENCH_KEEP_DATA") != null) {
            dataDirs.forEach(dir -> System.out.println("kept, with its server's log: " + dir));
            return;
        }
        for (Path dir : dataDirs) {
            TempDirs.deleteQuietly(dir);
            if (Files.exists(dir)) {
                System.out.println("could not remove " + dir);
            }
        }
    }

    /** The stubs' admin API over HTTP, as a drill reads it; the port exists once the stubs have started. */
    private StubsClient stubsAdmin() {
        return new StubsClient(stubsUri());
    }

    URI stubsUri() {
        return URI.create("http://127.0.0.1:" + stubs.port());
    }

    /** Fixed delays in ms for fraud, tax and payment; the payment goes through the ledger as a provider would. */
    void stub(int fraud, int tax, int payment) {
        stubs.resetToDefaultMappings();
        stubs.stubFor(post(urlPathEqualTo("/fraud/checks")).atPriority(1).willReturn(delayed(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withBodyFile("fraud-check-approve.json"), fraud)));
        stubs.stubFor(post(urlPathEqualTo("/tax/quotes")).atPriority(1).willReturn(delayed(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withBody("{\"tax\":\"4.00\",\"currency\":\"EUR\"}"), tax)));
        stubs.stubFor(post(urlPathEqualTo("/payments")).atPriority(1).willReturn(delayed(aResponse().withStatus(201)
                .withTransformers("ledger"), payment)));
    }

    /**
     * The stubs stand in for providers that have been up for days; a benchmark of a cold lastseat
     * must not also time a cold WireMock (its Jetty threads and JIT), nor a cold load generator in
     * this JVM. So before a server is started, {@code calls} requests to each of fraud, tax and
     * payment, 50 at a time in all, with no delay, each on a connection of its own through
     * {@link NewConnection}, the client of the bursts' buyers, which compiles it too; the payments go
     * into the ledger under keys of their own ({@code warm-stubs-*}). Sets no stub delays: call
     * {@link #stub} after it.
     */
    void warmStubs(int calls) throws InterruptedException {
        stub(0, 0, 0);
        List<Integer> statuses = Together.atMost(50, 3 * calls, i -> {
            String key = "warm-stubs-" + i / 3;
            String path = List.of("/fraud/checks", "/tax/quotes", "/payments").get(i % 3);
            byte[] body = ("{\"purchaseId\":\"" + key + "\",\"amount\":\"10.00\",\"currency\":\"EUR\"}").getBytes(StandardCharsets.UTF_8);
            try {
                return NewConnection.exchange(stubsUri(), "POST", path, Map.of("Content-Type", "application/json", "Idempotency-Key", key),
                                              body, Duration.ofSeconds(10)).status();
            } catch (UncheckedIOException e) {
                return 599;
            }
        }, Duration.ofMinutes(2));
        long notAnswered = statuses.stream().filter(status -> status >= 300).count();
        if (notAnswered > 0) {
            throw new IllegalStateException("warming the stubs failed: " + notAnswered + " of " + 3 * calls + " calls not answered 2xx");
        }
    }

    private static ResponseDefinitionBuilder delayed(ResponseDefinitionBuilder response, int millis) {
        return millis > 0 ? response.withFixedDelay(millis) : response;
    }

    /** Heap in use, from the server's own metrics; {@code settled} asks for a full GC first (jcmd) so idle means idle. */
    private long heapUsed(ServerProcess server, boolean settled) throws IOException, InterruptedException {
        if (settled) {
            jcmd(server, "GC.run");
        }
        // The metrics route checks the operator's key in the database, whose connections the purchases
        // in flight may all hold for a moment: a 503 there is asked again, a few times.
        for (int attempt = 1; ; attempt++) {
            try {
                OptionalDouble heap = lastseat.on(server.instance()).metric("memory_usedHeap_bytes");
                return heap.isPresent() ? (long) heap.getAsDouble() : -1L;
            } catch (IllegalStateException e) {
                if (attempt == 10 || !e.getMessage().contains("answered 503")) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    private static long rss(ServerProcess server) throws IOException {
        return Files.readAllLines(Path.of("/proc/" + server.pid() + "/status")).stream().filter(l -> l.startsWith("VmRSS:"))
                .map(l -> Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024).findFirst().orElse(-1L);
    }

    private static void jcmd(ServerProcess server, String command) throws IOException, InterruptedException {
        jcmd(server, command, ProcessBuilder.Redirect.DISCARD);
    }

    /** Runs {@code jcmd <server> command}, its output to {@code output}, for at most 30 s. */
    private static void jcmd(ServerProcess server, String command, ProcessBuilder.Redirect output) throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Process p = new ProcessBuilder(java.replaceAll("java$", "jcmd"), Long.toString(server.pid()), command)
                .redirectErrorStream(true).redirectOutput(output).start();
        p.waitFor(30, TimeUnit.SECONDS);
    }

    private Duration seconds(int n) {
        return Duration.ofSeconds(n);
    }

    void add(String figure, String value, String limit, String ratio) {
        rows.add(new Row(figure, value, limit, ratio));
        System.out.printf("   %s: %s (%s) %s%n", figure, value, limit, ratio);
    }

    private String table() {
        StringBuilder table = new StringBuilder("| figure | value | limit it is compared with | ratio |\n| --- | --- | --- | --- |\n");
        rows.forEach(r -> table.append("| ").append(r.figure()).append(" | ").append(r.value()).append(" | ")
                .append(r.limit()).append(" | ").append(r.ratio()).append(" |\n"));
        return table.toString();
    }

    static String ms(long micros) {
        return String.format(Locale.ROOT, "%.1f ms", micros / 1000.0);
    }

    static String mb(long bytes) {
        return String.format(Locale.ROOT, "%.1f MB", bytes / 1e6);
    }

    static String ratio(double r) {
        return Double.isNaN(r) ? "" : String.format(Locale.ROOT, "%.2f", r);
    }
}
