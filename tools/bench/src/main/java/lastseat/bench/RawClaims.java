package lastseat.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The hot event's yardstick: conditional claims straight through JDBC on the hot event's own H2 file, 16
 * threads, one seat each, autocommit — the database's own pace. It runs in a JVM of its own with the JVM's
 * default compilers, not in the benchmark's, which runs on C1 alone (bin/lib.sh, {@code bench_main}): the
 * claims per second are the ratio's denominator, and a slower yardstick would flatter the ratio.
 *
 * <p>For the same reason it is measured warm, as lastseat is: rounds of claims on events of their own, some
 * untimed, then the median of the measured ones ({@link Rounds#FULL}). A JVM just started claimed at a third of
 * the pace of its later rounds, so one cold round measured that JVM's JIT more than the database.
 */
final class RawClaims {
    private static final long BOUND_SECONDS = 300;

    /** Rounds claimed untimed, then measured; the figure is the measured rounds' median. */
    record Rounds(int warmUp, int measured) {
        /** The benchmark's. */
        static final Rounds FULL = new Rounds(2, 3);
        /** {@code --smoke}'s: every step once, to see the rows come out. */
        static final Rounds SMOKE = new Rounds(1, 1);
    }

    private RawClaims() {
    }

    /**
     * Claims per second on {@code file} (an H2 file without its {@code .mv.db}), in a child JVM: the median of
     * its measured rounds, each round's pace printed.
     */
    static double measure(Path file, int seats, Rounds rounds) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElse("java"), "--enable-preview",
                "-cp", System.getProperty("java.class.path"), RawClaims.class.getName(),
                file.toAbsolutePath().toString(), Integer.toString(seats), Integer.toString(rounds.warmUp()),
                Integer.toString(rounds.measured())));
        // Its output goes to a file, so that the wait below is what bounds a child that hangs.
        Path out = Files.createTempFile("lastseat-raw-claims", ".out");
        Process process = null;
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
            if (!process.waitFor(BOUND_SECONDS, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the raw claims did not end within " + BOUND_SECONDS + " s");
            }
            String text = Files.readString(out, StandardCharsets.UTF_8).trim();
            text.lines().filter(line -> line.contains("round")).forEach(line -> System.out.println("   raw claims, " + line));
            return rate(process.exitValue(), text);
        } finally {
            // Late, or this thread interrupted while it waited: the child does not outlive the run.
            if (process != null) {
                process.destroyForcibly();
            }
            Files.deleteIfExists(out);
        }
    }

    private static double rate(int exit, String text) {
        if (exit != 0) {
            throw new IllegalStateException("the raw claims failed (exit " + exit + "): " + text);
        }
        String[] lines = text.split("\n");
        return Double.parseDouble(lines[lines.length - 1].trim());
    }

    /**
     * Arguments: the H2 file, the number of seats each round claims, the untimed rounds and the measured ones;
     * prints each round's claims per second, and on its last line the measured rounds' median.
     */
    public static void main(String[] args) throws Exception {
        Path file = Path.of(args[0]);
        int seats = Integer.parseInt(args[1]);
        Rounds rounds = new Rounds(Integer.parseInt(args[2]), Integer.parseInt(args[3]));
        for (int round = 1; round <= rounds.warmUp(); round++) {
            System.out.println(String.format(Locale.ROOT, "warm-up round %d (untimed): %.0f/s", round, claims(file, seats)));
        }
        double[] rates = new double[rounds.measured()];
        for (int round = 0; round < rates.length; round++) {
            rates[round] = claims(file, seats);
            System.out.println(String.format(Locale.ROOT, "measured round %d: %.0f/s", round + 1, rates[round]));
        }
        Arrays.sort(rates);
        System.out.println(String.format(Locale.ROOT, "%.1f", rates[rates.length / 2]));
    }

    private static double claims(Path file, int seats) throws Exception {
        String url = "jdbc:h2:file:" + file.toAbsolutePath() + ";WRITE_DELAY=0";
        String event = "raw-" + UUID.randomUUID().toString().substring(0, 8);
        try (Connection c = DriverManager.getConnection(url, "sa", "")) {
            c.createStatement().execute("INSERT INTO events (id, name, capacity, price, currency, created_at) VALUES ('"
                                        + event + "', 'raw', " + seats + ", 1, 'EUR', CURRENT_TIMESTAMP)");
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO seats (event_id, label, position, state) VALUES (?, ?, ?, 'AVAILABLE')")) {
                for (int i = 1; i <= seats; i++) {
                    ps.setString(1, event);
                    ps.setString(2, "S" + i);
                    ps.setInt(3, i);
                    ps.addBatch();
                }
                ps.executeBatch();
            }
        }
        AtomicInteger next = new AtomicInteger();
        List<Future<?>> claimers = new ArrayList<>();
        long start = System.nanoTime();
        try (ExecutorService threads = Executors.newFixedThreadPool(16)) {
            for (int t = 0; t < 16; t++) {
                claimers.add(threads.submit(() -> {
                    try (Connection c = DriverManager.getConnection(url, "sa", "");
                         PreparedStatement claim = c.prepareStatement("UPDATE seats SET state = 'HELD', purchase_id = ? "
                                                                      + "WHERE event_id = ? AND label = ? AND state = 'AVAILABLE'")) {
                        for (int i = next.incrementAndGet(); i <= seats; i = next.incrementAndGet()) {
                            claim.setString(1, "raw-" + i);
                            claim.setString(2, event);
                            claim.setString(3, "S" + i);
                            claim.executeUpdate();
                        }
                    }
                    return null;
                }));
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        for (Future<?> claimer : claimers) {
            claimer.get(); // a failed claimer would leave seats unclaimed and the rate too high
        }
        return seats / seconds;
    }
}
