package lastseat.db;

import lastseat.idempotency.IdempotencyKeys;
import lastseat.inventory.Order;
import lastseat.purchase.PurchaseOutcome;
import lastseat.support.InProcess;
import lastseat.web.Reply;
import lastseat.work.Deadline;
import org.h2.engine.SessionLocal;
import org.h2.jdbc.JdbcConnection;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * What the H2 file keeps per purchase: purchases through the service's own code paths (the
 * idempotency key's claim and answer, the flow, the outbox's delivery) against a file database
 * opened as {@link Database#open} opens it, with the outside services faked, one purchase after
 * the other; then 2000 one-row commits, timed; then a pause with the database open. {@link
 * DiskUseTest} bounds the file; {@link #main} prints the figures of docs/BENCHMARKS.md:
 * <pre>
 * DiskUse [purchases [pause-seconds [key=value | ;H2_SETTING=value]...]]
 *     e.g. DiskUse 3000 5 db.h2-compaction-interval=0s ";COMPRESS=FALSE"      (as before the fix)
 * </pre>
 */
public final class DiskUse {
    private static final int SEATS_PER_EVENT = 1000;

    /** The file's size after the purchases, after {@code settle} with the database open, and the commits' cost. */
    public record Figures(int purchases, long commits, long bytesAfterRun, long peakBytes, long bytesAfterSettle,
                          long bytesAfterClose, double purchaseMillis, double purchaseP99Millis, double commitMicros,
                          double commitP99Micros, double commitMaxMicros) {
        double perPurchase(long bytes) {
            return (double) bytes / purchases;
        }

        @Override
        public String toString() {
            return String.format("%d purchases, %.1f commits each: %.0f B/purchase after the run (peak %.0f), "
                                 + "%.0f B/purchase after the pause, %.0f B/purchase after close; "
                                 + "purchase %.2f ms on average, %.2f ms p99; one-row commit %.0f us on average, %.0f us p99, %.0f us max",
                                 purchases, (double) commits / purchases, perPurchase(bytesAfterRun), perPurchase(peakBytes),
                                 perPurchase(bytesAfterSettle), perPurchase(bytesAfterClose), purchaseMillis, purchaseP99Millis, commitMicros,
                                 commitP99Micros, commitMaxMicros);
        }
    }

    private DiskUse() {
    }

    /** {@code purchases} confirmed purchases, 2000 one-row commits, {@code settle} with nothing to do, a clean close. */
    public static Figures run(Path dir, int purchases, Duration settle, String urlSettings, Map<String, String> overrides)
            throws Exception {
        Path mvDb = dir.resolve("lastseat.mv.db");
        long commits;
        long afterRun;
        long peak = 0;
        long afterSettle;
        long[] purchaseNanos = new long[purchases];
        long[] commitNanos = new long[2000];
        try (InProcess app = InProcess.onFile(dir.resolve("lastseat"), urlSettings, overrides)) {
            Buyer buyer = new Buyer(app, purchases);
            long commitsBefore = version(app.database);
            for (int i = 0; i < purchases; i++) {
                long start = System.nanoTime();
                buyer.buy();
                purchaseNanos[i] = System.nanoTime() - start;
                if (i % 100 == 99) {
                    peak = Math.max(peak, Files.size(mvDb));
                }
            }
            commits = version(app.database) - commitsBefore;
            afterRun = Files.size(mvDb);
            peak = Math.max(peak, afterRun);

            String event = buyer.events.getFirst();
            for (int i = 0; i < commitNanos.length; i++) {
                String name = "renamed " + i;
                long start = System.nanoTime();
                app.database.inTransaction(c -> Sql.update(c, "UPDATE events SET name = ? WHERE id = ?", name, event));
                commitNanos[i] = System.nanoTime() - start;
            }

            Thread.sleep(settle);
            afterSettle = Files.size(mvDb);
        }
        return new Figures(purchases, commits, afterRun, peak, afterSettle, Files.size(mvDb), average(purchaseNanos) / 1e6,
                           percentile(purchaseNanos, 99) / 1e6, average(commitNanos) / 1e3, percentile(commitNanos, 99) / 1e3, percentile(commitNanos, 100) / 1e3);
    }

    private static double average(long[] nanos) {
        return Arrays.stream(nanos).average().orElseThrow();
    }

    private static double percentile(long[] nanos, int percent) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return sorted[Math.min(sorted.length - 1, sorted.length * percent / 100)];
    }

    /**
     * Buys one seat at a time, each purchase as a client's request makes it: the key's claim, the
     * flow (reserve, checks, payment, confirm), the key's stored answer; the outbox delivers every tenth.
     */
    static final class Buyer {
        private final InProcess app;
        private final IdempotencyKeys keys;
        final List<String> events = new ArrayList<>();
        private int bought;

        Buyer(InProcess app, int purchases) {
            this.app = app;
            this.keys = new IdempotencyKeys(app.database, app.clock, app.config.abandonedAge());
            for (int i = 0; i < (purchases + SEATS_PER_EVENT - 1) / SEATS_PER_EVENT; i++) {
                events.add(app.newEvent(SEATS_PER_EVENT));
            }
        }

        void buy() throws InterruptedException {
            int i = bought++;
            String key = UUID.randomUUID().toString();
            IdempotencyKeys.Claim.Fresh claim = (IdempotencyKeys.Claim.Fresh) keys.claim(key, "fingerprint-" + i);
            Order order = new Order(events.get(i / SEATS_PER_EVENT), List.of(Integer.toString(i % SEATS_PER_EVENT + 1)), 1,
                                    "buyer-" + i, "buyer-" + i + "@example.com", "tok_ok", key);
            PurchaseOutcome outcome = app.flow.purchase(order, Deadline.after(Duration.ofSeconds(5), System.nanoTime()));
            if (!(outcome instanceof PurchaseOutcome.Confirmed confirmed)) {
                throw new IllegalStateException("purchase " + i + " ended " + outcome);
            }
            keys.complete(key, claim.token(), Reply.json(201, confirmed.purchase(), "/purchases/" + confirmed.purchase().id()));
            if (i % 10 == 9) {
                app.outbox.deliverDue();
            }
        }
    }

    /** The MVStore's version: one more for each commit written to the file. */
    static long version(Database db) {
        return db.read(c -> ((SessionLocal) c.unwrap(JdbcConnection.class).getSession()).getDatabase().getStore()
                .getMvStore().getCurrentVersion());
    }

    /** Prints the figures of one run, in a new temporary directory. */
    public static void main(String[] args) throws Exception {
        int purchases = args.length > 0 ? Integer.parseInt(args[0]) : 3000;
        Duration settle = Duration.ofSeconds(args.length > 1 ? Long.parseLong(args[1]) : 10);
        Map<String, String> overrides = new java.util.HashMap<>();
        StringBuilder urlSettings = new StringBuilder();
        for (int i = 2; i < args.length; i++) {
            if (args[i].startsWith(";")) {
                urlSettings.append(args[i]);
            } else {
                String[] kv = args[i].split("=", 2);
                overrides.put(kv[0], kv[1]);
            }
        }
        Path dir = Files.createTempDirectory("lastseat-disk");
        System.out.println(run(dir, purchases, settle, urlSettings.toString(), overrides));
    }
}
