package lastseat.bench;

import com.fasterxml.jackson.databind.JsonNode;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.ServerProcess;
import lastseat.testkit.Timelines;
import lastseat.testkit.Together;
import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.LongSummaryStatistics;
import java.util.Map;
import java.util.OptionalInt;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * {@code bin/bench onsale} (issue 11): what a real on-sale does to one lastseat, in the order it does it.
 * Stubs: fraud 100 ms, tax 150 ms, payment 200 ms, so the critical path is 350 ms and the payment
 * ceiling 20 permits / 0.2 s = 100 confirmed purchases/s. The server runs with the product's defaults.
 *
 * <ol>
 *   <li><b>Cold burst.</b> A server started seconds ago, never warmed up by the benchmark. Each of 5
 *       rounds makes a 1-seat event and releases 100 buyers together, each on a new connection of its
 *       own ({@link lastseat.testkit.NewConnection}), as real buyers arrive. The truth is 1 × 201 and 99 × 409; a round
 *       that is not prints each other answer, with the timeline of each purchase that held the seat.</li>
 *   <li><b>Overload.</b> Open-model arrivals at 5 × the ceiling (500/s) for 20 s on an event with
 *       plenty of seats: confirmed/s against 0.9 × the ceiling, the share of 202s (≤ 1 %), the 503s'
 *       server time (Server-Timing, ≤ 50 ms), and lastseat's CPU per confirmed purchase (≤ 3 ms).</li>
 *   <li><b>Light load.</b> 40/s for 10 s: p50 ≤ 1.05 × and p99 ≤ 1.2 × the path, CPU per confirmed ≤ 3 ms.</li>
 *   <li><b>Steady load.</b> 40/s for 30 s more: CPU per confirmed purchase on a server a minute old, and
 *       how it splits between the request threads, the JIT compilers, the HTTP client's threads, H2's
 *       file writes and the GC ({@code /proc/<pid>/task}).</li>
 *   <li><b>{@code --postgres}.</b> Two instances on one fresh PostgreSQL database, 300 buyers at once
 *       (half to each, new connections) for 30 seats: 30 × 201 and 270 × 409, no 5xx. Then the light
 *       load against one of them, the other stopped, for the CPU per confirmed purchase on PostgreSQL.</li>
 * </ol>
 *
 * <p>CPU is lastseat's process CPU (utime + stime from {@code /proc/<pid>/stat}) from the phase's start
 * until the server has settled: no purchase left {@code PAYMENT_UNKNOWN} and no outbox row pending, polled
 * through its own routes with a bounded wait, so the reconciliation and the emails a phase causes are
 * counted in it. It is divided by the seats the phase's event has sold once settled, which counts the
 * purchases the reconciler confirmed after a 202 too.
 */
final class OnSale {
    private static final double PATH_MS = 350;
    private static final double CEILING = 20 / 0.2;
    private static final double CPU_LIMIT_MS = 3;
    /** I5 as the drills check it: the servers' shipped {@code purchase.deadline} and bin/drill's slack. */
    private static final long ANSWER_BOUND_MS = 800 + 150;

    private final Bench bench;
    private final boolean smoke;
    private final boolean postgres;

    OnSale(Bench bench, boolean postgres) {
        this.bench = bench;
        this.smoke = bench.smoke;
        this.postgres = postgres;
    }

    void run() throws Exception {
        bench.warmStubs(smoke ? 20 : 2000);
        bench.stub(100, 150, 200);
        System.out.println("   load average at the start: " + loadAverage() + "; clock ticks per second " + ProcessCpu.TICKS_PER_SECOND);
        try (ServerProcess server = bench.server("onsale", Map.of())) {
            coldBurst(server);
            System.out.println("   after the burst: " + settle(server));
            overload(server);
            light(server, "H2 file");
            steady(server, "after the phases above, on a server about a minute old");
        }
        if (postgres) {
            twoInstancesOnPostgres();
        }
        System.out.println("   load average at the end: " + loadAverage());
    }

    /** The two instances on PostgreSQL alone (bin/bench onsale-pg), with the stubs as the on-sale sets them. */
    void twoInstancesAlone() throws Exception {
        bench.warmStubs(smoke ? 20 : 2000);
        bench.stub(100, 150, 200);
        twoInstancesOnPostgres();
        System.out.println("   load average at the end: " + loadAverage());
    }

    /** Where {@link #train} has the JVM write its AOT cache: bin/train sets it. */
    static final String AOT_OUTPUT = "lastseat.aot-output";

    /**
     * {@code bin/train}: an on-sale run only to teach JDK 25's AOT cache, written to {@code -Dlastseat.aot-output},
     * every path an on-sale takes: cold bursts answered 409, an overload's refusals and cancelled payments, light
     * trade. Its stubs and rates are not the measured on-sale's (fraud 80, tax 120, payment 250 ms, so a ceiling of
     * 80/s; bursts of 60 buyers; the overload at 4 × for 15 s), so what {@code bin/bench onsale} measures with the
     * cache is not the load it was trained on.
     * Nothing here is a figure. The JVM writes the cache as it exits, so the server is stopped here and waited for.
     */
    void train() throws Exception {
        String output = System.getProperty(AOT_OUTPUT, "");
        if (output.isBlank()) {
            throw new IllegalArgumentException("the train scenario writes an AOT cache to -D" + AOT_OUTPUT + "=<file>; bin/train sets it");
        }
        bench.warmStubs(smoke ? 20 : 2000);
        bench.stub(80, 120, 250);
        double ceiling = 20 / 0.25;
        try (ServerProcess server = bench.start(bench.dataDir("train"), Map.of(), List.of("-XX:AOTCacheOutput=" + output))) {
            for (int round = 1; round <= (smoke ? 1 : 3); round++) {
                List<Answer> answers = burst(smoke ? 10 : 60, i -> server.instance(), bench.newEvent(server, 1), "train" + round);
                System.out.println("   training burst " + round + ": " + statuses(answers) + "; kinds " + kinds(answers));
            }
            for (double rate : smoke ? new double[] {20, 5} : new double[] {4 * ceiling, 30}) {
                String event = bench.newEvent(server, 10_000);
                Bench.Load load = Bench.open(rate, Duration.ofSeconds(smoke ? 1 : rate > ceiling ? 15 : 10), i -> bench.purchase(server, event));
                System.out.println("   training at " + (int) rate + " arrivals/s: " + load + "; " + settle(server));
            }
            // A child JVM assembles the cache after the server's own work has ended: seconds more.
            OptionalInt exit = server.terminate(Duration.ofMinutes(3));
            if (exit.isEmpty()) {
                throw new IllegalStateException("the training server was still running 3 minutes after SIGTERM, so its AOT cache may be unwritten; see "
                                                + server.log());
            }
            if (!Files.isRegularFile(Path.of(output))) {
                throw new IllegalStateException("the training server exited (code " + exit.getAsInt() + ") without writing its AOT cache "
                                                + output + "; see " + server.log());
            }
            System.out.println("   training server stopped, exit code " + exit.getAsInt());
        }
    }

    // --- the phases ---

    private void coldBurst(ServerProcess server) throws InterruptedException {
        int rounds = smoke ? 2 : 5;
        int buyers = smoke ? 10 : 100;
        int exact = 0;
        for (int round = 1; round <= rounds; round++) {
            String event = bench.newEvent(server, 1);
            long start = System.nanoTime();
            List<Answer> answers = burst(buyers, i -> server.instance(), event, "round" + round);
            double seconds = (System.nanoTime() - start) / 1e9;
            boolean truth = count(answers, 201) == 1 && count(answers, 409) == buyers - 1;
            exact += truth ? 1 : 0;
            System.out.printf(Locale.ROOT, "   cold burst round %d: %s in %.2f s; kinds %s; slowest server time %s%s%n", round,
                              statuses(answers), seconds, kinds(answers), slowestServerTime(answers), truth ? "" : "  <-- not the truth");
            if (!truth) {
                explain(server, answers);
            }
        }
        bench.add("cold burst: rounds answered exactly 1 × 201 + " + (buyers - 1) + " × 409 (" + buyers
                  + " buyers on new connections at a 1-seat event, server not warmed up by the benchmark)", exact + " of " + rounds,
                  "every round", Bench.ratio(exact / (double) rounds));
    }

    /** A round that was not the truth: each answer other than 409, and the timeline of each purchase that held the seat. */
    private void explain(ServerProcess server, List<Answer> answers) {
        for (Answer a : answers) {
            if (a.status() == 409) {
                continue;
            }
            // 598 and 599 are the load generator's own failures, with a text body.
            String detail = a.status() >= 400 && a.status() < 598 ? ": " + a.json().path("detail").asText("") : "";
            System.out.printf(Locale.ROOT, "     %d %s, server time %d ms, client %d ms%s%n", a.status(), a.type(), a.serverMillis(),
                              a.elapsedMillis(), detail);
            String id = a.status() < 300 ? a.json().path("id").asText("") : "";
            if (!id.isEmpty()) {
                for (JsonNode step : client(server).purchaseView(id).path("timeline")) {
                    System.out.printf("       %s %s → %s: %s%n", step.path("step").asText(), step.path("startedAt").asText(),
                                      step.path("endedAt").asText(), step.path("outcome").asText());
                }
            }
        }
    }

    /**
     * Up to {@code n} of the answers later than deadline + slack on the server's clock, slowest first, each as
     * {@link #slowest} describes it: which step of a late purchase took the time, or that none did.
     */
    private List<String> late(ServerProcess server, Bench.Load load, int n) {
        return load.answers.stream().filter(a -> late(a.answer()))
                .sorted(Comparator.comparingLong((Bench.Load.Answer a) -> a.answer().serverMillis()).reversed())
                .limit(n)
                .map(a -> describe(server, a))
                .toList();
    }

    /**
     * The {@code n} slowest answers with {@code status} (from their intended start), each with its server time and
     * its purchase's timeline as durations: whether the tail is one step or the whole request waiting.
     */
    private List<String> slowest(ServerProcess server, Bench.Load load, int status, int n) {
        return load.answers.stream().filter(a -> a.status() == status)
                .sorted(Comparator.comparingLong((Bench.Load.Answer a) -> a.end() - a.intended()).reversed())
                .limit(n)
                .map(a -> describe(server, a))
                .toList();
    }

    /** One answer: its status and kind, its times, and its purchase's timeline as durations when it has a purchase. */
    private String describe(ServerProcess server, Bench.Load.Answer a) {
        StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%s, %d ms from its intended start, server time %d ms:",
                kind(a.answer()), (a.end() - a.intended()) / 1_000_000, a.answer().serverMillis()));
        String id = a.answer().status() < 300 ? a.answer().json().path("id").asText("") : "";
        if (!id.isEmpty()) {
            line.append(Timelines.describe(client(server).purchaseView(id).path("timeline")));
        }
        return line.toString();
    }

    /** The 503s' server time p99 in each 5 s of intended arrivals: whether the tail is the overload's first seconds or all of it. */
    private static String shedByWindow(Bench.Load load) {
        long first = load.answers.stream().mapToLong(Bench.Load.Answer::intended).min().orElse(0);
        Map<Long, Histogram> windows = new TreeMap<>();
        for (Bench.Load.Answer a : load.answers) {
            var micros = a.answer().serverMicros();
            if (a.status() == 503 && micros.isPresent()) {
                windows.computeIfAbsent((a.intended() - first) / TimeUnit.SECONDS.toNanos(5),
                                        w -> new Histogram(TimeUnit.MINUTES.toMicros(5), 3)).recordValue(Math.max(0, micros.getAsLong()));
            }
        }
        StringBuilder out = new StringBuilder();
        windows.forEach((w, h) -> out.append(out.isEmpty() ? "" : ", ").append(w * 5).append("–").append(w * 5 + 5).append(" s ")
                .append(Bench.ms(h.getValueAtPercentile(99))).append(" (").append(h.getTotalCount()).append(")"));
        return out.toString();
    }

    private void overload(ServerProcess server) throws Exception {
        double rate = smoke ? 20 : 5 * CEILING;
        Duration length = Duration.ofSeconds(smoke ? 1 : 20);
        Measured measured = openLoad(server, rate, length);
        Bench.Load load = measured.load();
        Settled settled = measured.settled();
        double cpu = measured.cpuMillis();
        int sold = measured.sold();
        System.out.println("   overload: " + load);
        System.out.println("   overload answers by kind: " + kinds(load.answers.stream().map(Bench.Load.Answer::answer).toList()));
        System.out.println("   overload: lastseat's CPU by thread: " + measured.split());
        System.out.printf(Locale.ROOT, "   overload: %.0f ms of lastseat CPU until settled (%s), %d seats sold (%d answered 201)%n",
                          cpu, settled, sold, load.count(201));

        String phase = "on-sale overload, " + (int) rate + " arrivals/s for " + length.toSeconds() + " s (5 × the ceiling)";
        double confirmedPerSecond = load.count(201) / load.seconds();
        double goal = 0.9 * CEILING;
        bench.add(phase + ": confirmed/s (answered 201)", String.format(Locale.ROOT, "%.1f/s", confirmedPerSecond),
                  String.format(Locale.ROOT, "0.9 × 20 permits / 0.2 s = %.0f/s", goal), Bench.ratio(confirmedPerSecond / goal));
        double share = load.total() == 0 ? Double.NaN : load.count(202) / (double) load.total();
        bench.add(phase + ": share of answers 202 (payment unknown)", String.format(Locale.ROOT, "%.1f %%", share * 100), "1 %",
                  Bench.ratio(share / 0.01));
        Histogram shed = new Histogram(TimeUnit.MINUTES.toMicros(5), 3);
        int untimed = 0;
        for (Bench.Load.Answer a : load.answers) {
            if (a.status() == 503) {
                var micros = a.answer().serverMicros();
                if (micros.isPresent()) {
                    shed.recordValue(Math.max(0, micros.getAsLong()));
                } else {
                    untimed++;
                }
            }
        }
        if (untimed > 0) {
            System.out.println("   overload: " + untimed + " answers 503 carried no Server-Timing and are left out of its figures");
        }
        System.out.println("   overload: 503 server time p99 by 5 s of arrivals: " + shedByWindow(load));
        if (shed.getTotalCount() == 0) {
            bench.add(phase + ": 503 server time p99", "— (no 503 with Server-Timing)", "50 ms", "");
            bench.add(phase + ": 503 server time max", "—", "50 ms", "");
        } else {
            bench.add(phase + ": 503 server time p99 (Server-Timing, " + shed.getTotalCount() + " answers)",
                      Bench.ms(shed.getValueAtPercentile(99)), "50 ms", Bench.ratio(shed.getValueAtPercentile(99) / 1000.0 / 50));
            bench.add(phase + ": 503 server time max", Bench.ms(shed.getMaxValue()), "50 ms", Bench.ratio(shed.getMaxValue() / 1000.0 / 50));
        }
        bench.add(phase + ": answers by status", statuses(load.answers.stream().map(Bench.Load.Answer::answer).toList()).toString(), "", "");
        addLateRow(phase, load.answers.stream().map(Bench.Load.Answer::answer).toList());
        late(server, load, 5).forEach(line -> System.out.println("     " + line));
        addCpuRow(phase + ": lastseat CPU per confirmed purchase (H2 file)", cpu, sold, settled);
    }

    /**
     * An open load on a new 10,000-seat event, then lastseat's CPU until it settled, that CPU split by
     * kind of thread ({@link ProcessCpu#split}, the same window), and the seats sold.
     */
    private record Measured(Bench.Load load, Settled settled, double cpuMillis, String split, int sold) {
    }

    private Measured openLoad(ServerProcess server, double rate, Duration length) throws Exception {
        String event = bench.newEvent(server, 10_000);
        Map<String, Long> threadsBefore = ProcessCpu.ticksByThread(server.pid());
        double cpuBefore = ProcessCpu.millis(server.pid());
        Bench.Load load = Bench.open(rate, length, i -> bench.purchase(server, event));
        Settled settled = settle(server);
        double cpu = ProcessCpu.millis(server.pid()) - cpuBefore;
        String split = ProcessCpu.split(threadsBefore, ProcessCpu.ticksByThread(server.pid()));
        return new Measured(load, settled, cpu, split, client(server).event(event).path("sold").asInt());
    }

    /** The light load on a settled server: latency of the confirmed purchases against the path, and CPU per confirmed. */
    private void light(ServerProcess server, String database) throws Exception {
        double rate = smoke ? 10 : 40;
        Duration length = Duration.ofSeconds(smoke ? 1 : 10);
        Measured measured = openLoad(server, rate, length);
        Bench.Load load = measured.load();
        Settled settled = measured.settled();
        double cpu = measured.cpuMillis();
        int sold = measured.sold();
        System.out.println("   light (" + database + "): " + load);
        System.out.println("   light (" + database + "): lastseat's CPU by thread: " + measured.split());
        System.out.printf(Locale.ROOT, "   light (%s): %.0f ms of lastseat CPU until settled (%s), %d seats sold (%d answered 201)%n",
                          database, cpu, settled, sold, load.count(201));

        System.out.println("   light (" + database + "): the slowest confirmed purchases, where their time went:");
        slowest(server, load, 201, 3).forEach(line -> System.out.println("     " + line));

        String phase = "on-sale light load, " + (int) rate + "/s for " + length.toSeconds() + " s";
        if (database.equals("H2 file")) {
            Histogram confirmed = load.latency(201);
            double p50 = 1.05 * PATH_MS;
            double p99 = 1.2 * PATH_MS;
            if (confirmed.getTotalCount() == 0) {
                bench.add(phase + ": p50 purchase latency", "— (none confirmed)", "1.05 × critical path 350 ms = 367.5 ms", "");
                bench.add(phase + ": p99 purchase latency", "— (none confirmed)", "1.2 × critical path 350 ms = 420 ms", "");
            } else {
                bench.add(phase + ": p50 purchase latency", Bench.ms(confirmed.getValueAtPercentile(50)),
                          "1.05 × critical path 350 ms = 367.5 ms", Bench.ratio(confirmed.getValueAtPercentile(50) / 1000.0 / p50));
                bench.add(phase + ": p99 purchase latency", Bench.ms(confirmed.getValueAtPercentile(99)),
                          "1.2 × critical path 350 ms = 420 ms", Bench.ratio(confirmed.getValueAtPercentile(99) / 1000.0 / p99));
            }
        }
        addCpuRow(phase + ": lastseat CPU per confirmed purchase (" + database + ")", cpu, sold, settled);
    }

    /**
     * {@code bin/bench steady}: a new server, the light load for 20 s, then {@link #steady}: about a
     * minute, for comparing what a change does to the CPU per purchase without the whole on-sale.
     */
    void steadyAlone() throws Exception {
        bench.stub(100, 150, 200);
        try (ServerProcess server = bench.server("onsale", Map.of())) {
            openLoad(server, smoke ? 10 : 40, Duration.ofSeconds(smoke ? 1 : 20));
            steady(server, "after 20 s of the light load alone (bin/bench steady)");
        }
    }

    /**
     * The light load's rate for longer, on a server that has by now run for a minute and settled, and
     * where that CPU went, by kind of thread: a minute in, the JIT compilers still take about a quarter
     * of it, which the figures above carry too.
     */
    private void steady(ServerProcess server, String after) throws Exception {
        double rate = smoke ? 10 : 40;
        Duration length = Duration.ofSeconds(smoke ? 1 : 30);
        Measured measured = openLoad(server, rate, length);
        System.out.println("   steady: " + measured.load());
        System.out.println("   steady: lastseat's CPU by thread: " + measured.split());
        System.out.printf(Locale.ROOT, "   steady: %.0f ms of lastseat CPU until settled (%s), %d seats sold%n",
                          measured.cpuMillis(), measured.settled(), measured.sold());
        addCpuRow("on-sale steady load, " + (int) rate + "/s for " + length.toSeconds() + " s " + after + ": "
                  + "lastseat CPU per confirmed purchase (H2 file)", measured.cpuMillis(), measured.sold(), measured.settled());
    }

    /**
     * Two instances on one fresh PostgreSQL database, neither warmed up by the benchmark: 300 buyers released together
     * for 30 seats, every other one at the other instance, each on a new connection. Then the second
     * instance is stopped (its workers share the database and would do the first one's background work)
     * and the light load runs against the first.
     */
    private void twoInstancesOnPostgres() throws Exception {
        int seats = smoke ? 2 : 30;
        int buyers = seats * 10;
        String phase = "on-sale, two instances on one PostgreSQL, " + buyers + " buyers at once for " + seats + " seats";
        String pg = PostgresBench.freshDatabase();
        if (pg == null) {
            System.out.println("   *** PostgreSQL is not reachable at 127.0.0.1:5432: the PostgreSQL part of the on-sale did NOT run ***");
            bench.add(phase, "— (PostgreSQL not reachable at 127.0.0.1:5432)", seats + " × 201, " + (buyers - seats) + " × 409", "");
            return;
        }
        try {
            Map<String, String> settings = Map.of("db.url", pg, "db.user", "postgres", "db.password", "");
            Path dir = bench.dataDir("onsale-pg");
            try (ServerProcess a = bench.start(dir.resolve("a"), settings);
                 ServerProcess b = bench.start(dir.resolve("b"), settings)) {
                String event = bench.newEvent(a, seats);
                long start = System.nanoTime();
                List<Answer> answers = burst(buyers, i -> i % 2 == 0 ? a.instance() : b.instance(), event, "pg");
                double seconds = (System.nanoTime() - start) / 1e9;
                List<Answer> atA = new ArrayList<>();
                List<Answer> atB = new ArrayList<>();
                for (int i = 0; i < answers.size(); i++) {
                    (i % 2 == 0 ? atA : atB).add(answers.get(i));
                }
                System.out.printf(Locale.ROOT, "   two instances: %s in %.2f s; kinds %s; instance A %s, instance B %s; slowest server time %s%n",
                                  statuses(answers), seconds, kinds(answers), statuses(atA), statuses(atB), slowestServerTime(answers));
                Map<String, LongSummaryStatistics> said = new TreeMap<>();
                LongSummaryStatistics serverTime = new LongSummaryStatistics();
                for (Answer x : answers) {
                    serverTime.accept(x.serverMillis());
                    if (x.status() >= 500 && x.status() < 598) {
                        // The purchase's id in a detail would make every answer its own line.
                        said.computeIfAbsent(x.status() + " " + x.json().path("detail").asText("").replaceAll("[0-9a-f-]{36}", "<id>")
                                             + (x.serverMicros().isEmpty() ? " [no Server-Timing: the access filter's answer]" : ""),
                                             d -> new LongSummaryStatistics()).accept(x.serverMillis());
                    }
                }
                // The server's time where the answer has Server-Timing; else the client's.
                said.forEach((detail, time) -> System.out.printf(Locale.ROOT, "     %d × %s (server time mean %.0f ms, max %d ms)%n",
                                                                 time.getCount(), detail, time.getAverage(), time.getMax()));
                System.out.printf(Locale.ROOT, "   two instances: server time mean %.0f ms, max %d ms%n", serverTime.getAverage(), serverTime.getMax());
                // Why a buyer was not told the truth: each 202 and 5xx (five at most), with its purchase's timeline.
                explain(a, java.util.stream.Stream.concat(answers.stream().filter(x -> x.status() == 202),
                                                          answers.stream().filter(x -> x.status() >= 500)).limit(5).toList());
                int fiveHundreds = (int) answers.stream().filter(x -> x.status() >= 500).count();
                bench.add(phase + ": answered 201", Integer.toString(count(answers, 201)), "exactly " + seats,
                          Bench.ratio(count(answers, 201) / (double) seats));
                bench.add(phase + ": answered 409", Integer.toString(count(answers, 409)), "exactly " + (buyers - seats),
                          Bench.ratio(count(answers, 409) / (double) (buyers - seats)));
                bench.add(phase + ": answered 5xx", Integer.toString(fiveHundreds), "0", "");
                addLateRow(phase, answers);
                System.out.println("   two instances: sold after the burst " + client(a).event(event).path("sold").asInt() + " of " + seats
                                   + "; " + settle(a));
                b.close();
                light(a, "PostgreSQL");
            }
        } finally {
            PostgresBench.drop(pg);
        }
    }

    // --- plumbing ---

    /**
     * {@code n} buyers of one seat each, released together, buyer {@code i} at {@code target(i)} on a TCP connection
     * of its own ({@link Bench#purchaseOnNewConnection}), opened after the release. Prints what this process (the
     * buyers' clients and the stubs) spent of the machine's CPU meanwhile, beside the machine's whole.
     */
    private static List<Answer> burst(int n, IntFunction<lastseat.testkit.Instance> target, String event, String label) throws InterruptedException {
        MachineCpu before = MachineCpu.now();
        List<Answer> answers = Together.run(n, i -> Bench.purchaseOnNewConnection(target.apply(i), event, label + "-buyer-" + i,
                                                                                  Duration.ofSeconds(60)), Duration.ofMinutes(3));
        System.out.println("   " + label + ": " + MachineCpu.now().since(before));
        return answers;
    }

    /** The machine's busy CPU (the first line of {@code /proc/stat}) and this process's, in milliseconds. */
    record MachineCpu(double machineMillis, double benchMillis, long nanos) {
        static MachineCpu now() {
            try {
                String[] cpu = Files.readAllLines(Path.of("/proc/stat")).getFirst().trim().split("\\s+");
                long busy = 0;
                // user, nice, system, irq, softirq, steal: not idle (4), iowait (5), nor guest (9, 10), which user and nice hold already.
                for (int i : new int[] {1, 2, 3, 6, 7, 8}) {
                    busy += i < cpu.length ? Long.parseLong(cpu[i]) : 0;
                }
                return new MachineCpu(busy * 1000.0 / ProcessCpu.TICKS_PER_SECOND, ProcessCpu.millis(ProcessHandle.current().pid()),
                                      System.nanoTime());
            } catch (IOException e) {
                return new MachineCpu(Double.NaN, Double.NaN, System.nanoTime());
            }
        }

        String since(MachineCpu before) {
            return String.format(Locale.ROOT, "the machine's CPU from the release to the last answer %.0f ms in %.0f ms, "
                                              + "%.0f ms of it the benchmark's own (the buyers' clients and the stubs)",
                                 machineMillis - before.machineMillis, (nanos - before.nanos) / 1e6, benchMillis - before.benchMillis);
        }
    }

    /** What settling found: whether it did, how long it took, what was left. */
    record Settled(boolean done, double seconds, int unknown, int pending) {
        @Override
        public String toString() {
            return done ? String.format(Locale.ROOT, "settled in %.1f s", seconds)
                        : String.format(Locale.ROOT, "NOT settled after %.0f s: %d PAYMENT_UNKNOWN, %d outbox rows pending",
                                        seconds, unknown, pending);
        }
    }

    /** Polls the server's own routes until no purchase is PAYMENT_UNKNOWN and no outbox row pending; bounded. */
    Settled settle(ServerProcess server) throws InterruptedException {
        LastseatClient client = client(server);
        long start = System.nanoTime();
        long until = start + Duration.ofSeconds(smoke ? 30 : 180).toNanos();
        while (true) {
            int unknown = client.purchasesIn("PAYMENT_UNKNOWN").path("count").asInt();
            JsonNode outbox = client.outbox("pending");
            int pending = outbox.path("count").asInt();
            double seconds = (System.nanoTime() - start) / 1e9;
            if (unknown == 0 && pending == 0) {
                return new Settled(true, seconds, 0, 0);
            }
            if (System.nanoTime() > until) {
                Settled left = new Settled(false, seconds, unknown, pending);
                System.out.println("   *** " + left + " ***");
                return left;
            }
            Thread.sleep(250);
        }
    }

    /**
     * I5 on the server's clock ({@code Server-Timing}; the client's for an answer without it): how many answers
     * came later than the deadline and the drills' slack, and the slowest. The benchmark reports it; the drills
     * and tests enforce it.
     */
    private void addLateRow(String phase, List<Answer> answers) {
        List<Answer> lateOnes = answers.stream().filter(OnSale::late).toList();
        long late = lateOnes.size();
        long slowest = answers.stream().mapToLong(Answer::serverMillis).max().orElse(0);
        if (late > 0) {
            System.out.println("   " + phase + ": the answers later than deadline + slack, by kind: " + kinds(lateOnes));
        }
        bench.add(phase + ": answers later than deadline + slack (I5, server time)", late + " of " + answers.size()
                  + " (slowest " + slowest + " ms)", "0 (800 + 150 ms)", "");
    }

    private void addCpuRow(String figure, double cpuMillis, int sold, Settled settled) {
        String value = sold == 0 ? "— (none sold)" : String.format(Locale.ROOT, "%.1f ms", cpuMillis / sold);
        if (!settled.done()) {
            value += " (not settled)";
        }
        bench.add(figure, value, "3 ms", sold == 0 ? "" : Bench.ratio(cpuMillis / sold / CPU_LIMIT_MS));
    }

    private LastseatClient client(ServerProcess server) {
        return bench.lastseat.on(server.instance());
    }

    private static int count(List<Answer> answers, int status) {
        return (int) answers.stream().filter(a -> a.status() == status).count();
    }

    /** Answers by status, e.g. {201=1, 409=99}. */
    static Map<Integer, Integer> statuses(List<Answer> answers) {
        Map<Integer, Integer> statuses = new TreeMap<>();
        answers.forEach(a -> statuses.merge(a.status(), 1, Integer::sum));
        return statuses;
    }

    /** Answers by status and problem kind, e.g. {201=1, 409 seats-taken=98, 503 overloaded=1}. */
    static Map<String, Integer> kinds(List<Answer> answers) {
        Map<String, Integer> kinds = new TreeMap<>();
        for (Answer a : answers) {
            kinds.merge(kind(a), 1, Integer::sum);
        }
        return kinds;
    }

    /** Whether an answer came later than I5's deadline + slack on the server's clock. */
    private static boolean late(Answer a) {
        return a.serverMillis() > ANSWER_BOUND_MS;
    }

    /** One answer's kind: its status, with the problem's type for an error, or the generator's own failure. */
    static String kind(Answer a) {
        if (a.status() >= 598) {
            return a.status() + " " + new String(a.raw(), StandardCharsets.UTF_8);
        }
        String type = a.status() < 300 ? "" : a.type();
        return type.isEmpty() ? Integer.toString(a.status()) : a.status() + " " + type;
    }

    private static String slowestServerTime(List<Answer> answers) {
        return answers.stream().map(Answer::serverMicros).filter(java.util.OptionalLong::isPresent)
                .mapToLong(java.util.OptionalLong::getAsLong).max().stream().mapToObj(Bench::ms).findFirst().orElse("—");
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (IOException e) {
            return "(unknown: " + e.getMessage() + ")";
        }
    }

    /** A process's CPU time: utime + stime from {@code /proc/<pid>/stat}, in clock ticks of {@code getconf CLK_TCK}. */
    static final class ProcessCpu {
        static final long TICKS_PER_SECOND = clockTicks();

        private ProcessCpu() {
        }

        static double millis(long pid) throws IOException {
            return ticks(Files.readString(Path.of("/proc/" + pid + "/stat"))) * 1000.0 / TICKS_PER_SECOND;
        }

        /** utime + stime of a process's or a thread's {@code stat} line. */
        private static long ticks(String stat) {
            // The command name (field 2) is in parentheses and may hold spaces; fields 3… follow the last ')'.
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split("\\s+");
            return Long.parseLong(fields[14 - 3]) + Long.parseLong(fields[15 - 3]);
        }

        /** Each live thread's CPU so far, in clock ticks, by thread id and name ({@code /proc/<pid>/task}). */
        static Map<String, Long> ticksByThread(long pid) throws IOException {
            Map<String, Long> ticks = new TreeMap<>();
            try (var tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
                for (Path task : tasks.toList()) {
                    try {
                        String stat = Files.readString(task.resolve("stat"));
                        String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
                        ticks.put(task.getFileName() + " " + name, ticks(stat));
                    } catch (IOException e) {
                        // The thread ended between the listing and the read: its ticks are not counted.
                    }
                }
            }
            return ticks;
        }

        /**
         * Where the CPU between two {@link #ticksByThread} readings went, by kind of thread, largest
         * first, as shares of what the threads alive at the second reading spent: threads that ended in
         * between are not counted.
         */
        static String split(Map<String, Long> before, Map<String, Long> after) {
            Map<String, Long> byKind = new TreeMap<>();
            long total = 0;
            for (var thread : after.entrySet()) {
                long spent = thread.getValue() - before.getOrDefault(thread.getKey(), 0L);
                byKind.merge(kind(thread.getKey().substring(thread.getKey().indexOf(' ') + 1)), spent, Long::sum);
                total += spent;
            }
            long all = Math.max(1, total);
            StringBuilder out = new StringBuilder();
            byKind.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                    .filter(kind -> kind.getValue() * 100 >= all)
                    .forEach(kind -> out.append(out.isEmpty() ? "" : ", ")
                            .append(String.format(Locale.ROOT, "%s %.0f %%", kind.getKey(), kind.getValue() * 100.0 / all)));
            return out.toString();
        }

        private static String kind(String threadName) {
            if (threadName.matches("C\\d CompilerThre.*")) {
                return "JIT compilers";
            }
            if (threadName.startsWith("ForkJoinPool-")) {
                return "virtual threads (requests and workers)";
            }
            if (threadName.startsWith("HttpClient-")) {
                return "JDK HTTP client's own threads";
            }
            if (threadName.contains("Poller")) {
                return "virtual threads' socket pollers";
            }
            if (threadName.startsWith("ForkJoinPool.co")) {
                return "JDK common pool";
            }
            if (threadName.startsWith("InnocuousThread")) {
                return "JDK helper threads (H2's async: file writes)";
            }
            if (threadName.startsWith("GC Thread") || threadName.matches("G\\d .*")) {
                return "garbage collector";
            }
            return threadName.replaceAll("\\d+", "#");
        }

        private static long clockTicks() {
            try {
                Process p = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
                if (p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 0) {
                    return Long.parseLong(out);
                }
            } catch (IOException | NumberFormatException e) {
                // below
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            System.out.println("   getconf CLK_TCK did not answer; taking 100 clock ticks per second (Linux's USER_HZ)");
            return 100;
        }
    }
}
