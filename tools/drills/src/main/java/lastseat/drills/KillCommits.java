package lastseat.drills;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import lastseat.config.LastseatConfig;
import lastseat.db.Database;
import lastseat.db.Sql;
import lastseat.testkit.TempDirs;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * kill -9 against a process committing to an H2 file: every commit the writer saw return must be in
 * the file when it is opened again. A seeded campaign of rounds on one file: each round starts a writer
 * process ({@link Writer}) that opens the file as the service does ({@link Database#open} with the
 * service's {@code application.yaml}, so the same URL settings) and commits from eight threads — rows
 * inserted, updated through six states and two in three deleted, so that whole chunks die and their
 * space is freed — printing each commit after it returned, and each delete before it runs, into a
 * file. The campaign kills it with SIGKILL at a seeded moment, reads that file, opens the database and
 * checks each row against its last line: present with that state or a later one, or gone once its
 * delete was announced.
 *
 * <p>Hazard: a kill loses a commit that had returned. That is the PAYING or the confirmation a buyer was
 * answered for, and so a charge the database forgets. H2 2.5.252 does it several ways: a commit's chunk
 * put into space the file freed is not found after the kill (its header names the chunk before:
 * {@code H2CommitGate}'s header keeper), and a commit or a statement another thread's chunk caught half
 * applied is left so by the open ({@code H2CommitGate}, {@code H2Leftovers}); so each row is read from
 * the table and through its index, which must agree. The unsafe arm is H2 alone, writing each commit
 * before it returns but reusing space and freeing it at once, without the gate ({@value #UNSAFE}), and
 * must lose commits, or the campaign cannot see a loss; the safe arm is the service's own settings,
 * which reuse space too, and must lose none.
 */
final class KillCommits {
    static final String NAME = "kill-commits";
    /** H2's own file system, so not through the gate; each commit written before it returns. */
    static final String UNSAFE = "jdbc:h2:nio: ;WRITE_DELAY=0;REUSE_SPACE=TRUE;RETENTION_TIME=0";
    static final String SAFE = "";
    static final int ROUNDS = 20;
    static final int UNSAFE_ROUNDS = 10;
    static final int THREADS = 8;
    static final int STATES = 6;
    static final Duration MIN_RUN = Duration.ofMillis(200);
    static final Duration MAX_RUN = Duration.ofMillis(2500);
    static final Duration WRITER_START = Duration.ofSeconds(60);
    private static final String DELETED = "0";
    private static final int DELETING = STATES + 1;
    private static final String NO_ROW = "no row";
    // Each open's migration check is not the campaign's finding; kept referenced so the level holds.
    private static final java.util.logging.Logger MIGRATIONS = java.util.logging.Logger.getLogger("org.flywaydb");

    static {
        MIGRATIONS.setLevel(java.util.logging.Level.WARNING);
    }

    /**
     * What a round found: commits printed, how many of them the reopened file lacked (a row older than
     * printed, or its table and its index disagreeing: a commit left half applied), the first few, the
     * writer's threads that died of an exception (they stop committing, so the round proves less), the
     * commits the kill left half applied that the reopening finished ({@code H2Leftovers}), the file's size.
     */
    record Round(int round, long runMillis, long printed, int lost, List<String> examples, List<String> writerErrors,
                 int finishedAtOpen, long fileBytes) {
    }

    private KillCommits() {
    }

    static Drill drill() {
        return new Drill(NAME, "kill -9 of a process committing to an H2 file, from 8 threads",
                         "H2 alone, reusing space and freeing it at once, loses printed commits; with the service's settings none "
                         + "in " + ROUNDS + " rounds, none half applied, no writer thread dead", KillCommits::run).onItsOwnServer();
    }

    private static void run(Target target, Settings settings, Findings findings) {
        prove(settings.auditSeed() != null ? settings.auditSeed() : System.currentTimeMillis(), ROUNDS, findings);
    }

    /** Both arms: unsafe until it loses (at most {@value #UNSAFE_ROUNDS} rounds), then safe for {@code rounds}. */
    static void prove(long seed, int rounds, Findings findings) {
        findings.figure("seed", seed);
        try {
            List<Round> unsafe = arm("unsafe", seed, UNSAFE_ROUNDS, UNSAFE, true, findings);
            findings.check(unsafe.stream().anyMatch(r -> r.lost() > 0),
                           "unsafe: a kill lost commits that had returned, so a loss can be seen (seed " + seed + ")");
            List<Round> safe = arm("safe", seed, rounds, SAFE, false, findings);
            long printed = safe.stream().mapToLong(Round::printed).sum();
            int lost = safe.stream().mapToInt(Round::lost).sum();
            long died = safe.stream().mapToLong(r -> r.writerErrors().size()).sum();
            findings.figure("commits", printed);
            findings.figure("lost", lost);
            findings.figure("finishedAtOpen", safe.stream().mapToInt(Round::finishedAtOpen).sum());
            findings.check(lost == 0, "safe: " + safe.size() + " kills, " + printed + " commits printed, " + lost
                                      + " missing or half applied after the restart (seed " + seed + ")");
            findings.check(died == 0, "safe: no writer thread died of an exception (" + died + " did)");
        } catch (IOException e) {
            findings.check(false, "the campaign could not run its writer: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            findings.check(false, "interrupted");
        }
    }

    /** {@code KillCommits <seed> <rounds> [settings]}: one arm, its rounds printed; for trying settings by hand. */
    public static void main(String[] args) throws Exception {
        Path dir = Files.createTempDirectory("lastseat-kill-manual");
        try {
            campaign(dir, Long.parseLong(args[0]), Integer.parseInt(args[1]), args.length > 2 ? args[2] : "", false,
                     r -> System.out.println(r));
        } finally {
            TempDirs.deleteQuietly(dir);
        }
    }

    private static List<Round> arm(String name, long seed, int rounds, String urlSettings, boolean stopAtLoss, Findings findings)
            throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("lastseat-kill-" + name);
        try {
            return campaign(dir, seed, rounds, urlSettings, stopAtLoss, r -> findings.note(name + ": round " + r.round() + ", killed after " + r.runMillis() + " ms: "
                                               + r.printed() + " commits printed, " + r.lost() + " missing, "
                                               + r.finishedAtOpen() + " half applied finished at the reopening, file "
                                               + r.fileBytes() / 1024 + " KB" + (r.examples().isEmpty() ? "" : "; " + r.examples())
                                               + (r.writerErrors().isEmpty() ? "" : "; writer threads died: " + r.writerErrors())));
        } finally {
            TempDirs.deleteQuietly(dir);
        }
    }

    /**
     * {@code rounds} rounds on a new file in {@code dir}; {@code urlSettings} is appended to the file's
     * URL ({@code ""}: the service's own settings). Stops early once a round lost a commit when
     * {@code stopAtLoss}.
     */
    static List<Round> campaign(Path dir, long seed, int rounds, String urlSettings, boolean stopAtLoss,
                                java.util.function.Consumer<Round> each)
            throws IOException, InterruptedException {
        Random random = new Random(seed);
        Map<Long, String> lastPrinted = new HashMap<>();
        List<Round> results = new ArrayList<>();
        long nextId = 1;
        for (int round = 1; round <= rounds; round++) {
            long runMillis = MIN_RUN.toMillis() + random.nextLong(MAX_RUN.toMillis() - MIN_RUN.toMillis());
            Map<Long, String> printed = new ConcurrentHashMap<>();
            AtomicLong lines = new AtomicLong();
            List<String> writerErrors = new ArrayList<>();
            runWriter(dir, urlSettings, nextId, random.nextLong(), Duration.ofMillis(runMillis), printed, lines, writerErrors);
            lastPrinted.putAll(printed);
            nextId = lastPrinted.keySet().stream().mapToLong(Long::longValue).max().orElse(0) + 1_000;
            Checked checked = check(dir, urlSettings, lastPrinted);
            List<String> lost = checked.lost();
            results.add(new Round(round, runMillis, lines.get(), lost.size(), lost.subList(0, Math.min(5, lost.size())),
                                  writerErrors, checked.finishedAtOpen(), Files.size(dir.resolve("kill.mv.db"))));
            each.accept(results.getLast());
            if (stopAtLoss && !lost.isEmpty()) {
                break;
            }
        }
        return results;
    }

    /** Starts a writer, lets it commit for {@code run} after it is ready, kills it, and collects every line it printed. */
    private static void runWriter(Path dir, String urlSettings, long firstId, long seed, Duration run,
                                  Map<Long, String> printed, AtomicLong lines, List<String> writerErrors)
            throws IOException, InterruptedException {
        // Into files, read after the writer is dead: a pipe read while the process dies can come up
        // short of what the writer wrote, which would count real deletes as lost rows.
        Path out = Files.createTempFile(dir, "writer", ".out");
        Path err = Files.createTempFile(dir, "writer", ".err");
        Process writer = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                            "--enable-preview", "-cp", System.getProperty("java.class.path"),
                                            Writer.class.getName(), dir.toString(), urlSettings, Long.toString(firstId),
                                            Long.toString(seed))
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        try {
            long giveUp = System.nanoTime() + WRITER_START.toNanos();
            while (!Files.readString(out, StandardCharsets.UTF_8).startsWith("ready\n")) {
                if (System.nanoTime() > giveUp || !writer.isAlive()) {
                    throw new IllegalStateException("the writer did not open the database within " + WRITER_START.toSeconds()
                                                    + " s: " + Files.readString(err, StandardCharsets.UTF_8).lines().findFirst().orElse(""));
                }
                Thread.sleep(20);
            }
            Thread.sleep(run);
        } finally {
            writer.destroyForcibly();   // SIGKILL on Linux: no shutdown hook, no close
            writer.waitFor();
        }
        for (String line : Files.readAllLines(out, StandardCharsets.UTF_8)) {
            String[] idState = line.split(" ");
            if (idState.length == 2) {
                printed.put(Long.parseLong(idState[0]), idState[1]);
                lines.incrementAndGet();
            }
        }
        Files.readAllLines(err, StandardCharsets.UTF_8).stream().filter(l -> l.startsWith("Exception in thread")).forEach(writerErrors::add);
        Files.delete(out);
        Files.delete(err);
    }

    /** A reopening's findings: the printed commits the file lacks (this round's only) and the half-applied ones it finished. */
    private record Checked(List<String> lost, int finishedAtOpen) {
    }

    /** Opens the file as a restarted service would and checks it against what the writer printed. */
    private static Checked check(Path dir, String urlSettings, Map<Long, String> lastPrinted) {
        List<Map<Long, String>> views;
        int finishedAtOpen;
        try (Database db = open(dir, urlSettings)) {
            finishedAtOpen = db.finishedAtOpen();
            views = views(db);
        }
        Map<Long, String> found = views.getFirst();
        List<String> lost = new ArrayList<>();
        Map<Long, String> truth = new HashMap<>();
        java.util.Set<Long> ids = new java.util.TreeSet<>();
        views.forEach(view -> ids.addAll(view.keySet()));
        for (long id : ids) {
            if (views.stream().map(view -> view.get(id)).distinct().count() > 1) {
                lost.add("row " + id + ": the table has " + describe(found.get(id)) + ", its index " + describe(views.get(1).get(id))
                         + "; read by another transaction, " + describe(views.get(2).get(id)) + " and " + describe(views.get(3).get(id)));
            }
        }
        lastPrinted.forEach((id, state) -> {
            String now = found.get(id);
            boolean kept = state.equals(DELETED) ? now == null
                    : Integer.parseInt(state) == DELETING ? now == null || Integer.parseInt(now) == STATES
                    : now != null && Integer.parseInt(now) >= Integer.parseInt(state);
            if (!kept) {
                lost.add("row " + id + ": printed " + (state.equals(DELETED) ? "deleted" : Integer.parseInt(state) == DELETING ? "deleting" : "state " + state)
                         + ", the file has " + describe(now));
                truth.put(id, now == null ? DELETED : now);
            }
        });
        // A loss is counted in the round that made it; later rounds hold the file to what it now has.
        lastPrinted.putAll(truth);
        return new Checked(lost, finishedAtOpen);
    }

    /**
     * The rows as the table has them (pad is in no index) and as its covering index has them, each read
     * by two transactions open at once: a commit left half applied shows as these disagreeing. Two,
     * because an entry such a commit left uncommitted reads as committed to the one transaction that
     * reuses the dead commit's slot, and as its old value to every other. Id to state, in the order
     * table, index, table, index.
     */
    static List<Map<Long, String>> views(Database db) {
        List<Map<Long, String>> views = new ArrayList<>();
        db.inTransaction(first -> {
            views.add(read(first, "SELECT id, state, pad FROM kill_rows"));
            views.add(read(first, "SELECT id, state FROM kill_rows USE INDEX (kill_rows_state)"));
            return db.inTransaction(second -> {
                views.add(read(second, "SELECT id, state, pad FROM kill_rows"));
                views.add(read(second, "SELECT id, state FROM kill_rows USE INDEX (kill_rows_state)"));
                return null;
            });
        });
        return views;
    }

    private static Map<Long, String> read(java.sql.Connection c, String sql) throws java.sql.SQLException {
        Map<Long, String> rows = new HashMap<>();
        try (ResultSet rs = c.createStatement().executeQuery(sql)) {
            while (rs.next()) {
                rows.put(rs.getLong(1), Integer.toString(rs.getInt(2)));
            }
        }
        return rows;
    }

    private static String describe(String state) {
        return state == null ? NO_ROW : "state " + state;
    }

    /**
     * The file opened as the service opens it; {@code settings} is {@code ;H2_SETTING=value} pieces
     * added to the URL and {@code key=value} overrides of the service's configuration, separated by spaces.
     */
    static final String CREATE_TABLE = "CREATE TABLE IF NOT EXISTS kill_rows (id BIGINT PRIMARY KEY, state INT NOT NULL, "
                                       + "pad VARCHAR(400) NOT NULL)";
    static final String CREATE_INDEX = "CREATE INDEX IF NOT EXISTS kill_rows_state ON kill_rows (state, id)";

    static Database open(Path dir, String settings) {
        Map<String, String> overrides = new HashMap<>();
        StringBuilder url = new StringBuilder("jdbc:h2:file:" + dir.resolve("kill").toAbsolutePath());
        for (String setting : settings.split(" ")) {
            if (setting.startsWith("jdbc:h2:")) {
                url = new StringBuilder(setting + dir.resolve("kill").toAbsolutePath());
            } else if (setting.startsWith(";")) {
                url.append(setting);
            } else if (!setting.isEmpty()) {
                String[] kv = setting.split("=", 2);
                overrides.put(kv[0], kv[1]);
            }
        }
        overrides.put("db.url", url.toString());
        LastseatConfig config = LastseatConfig.from(Config.just(ConfigSources.create(overrides),
                                                                ConfigSources.classpath("application.yaml")));
        Database db = Database.open(config.db());
        db.inTransaction(c -> Sql.update(c, CREATE_TABLE));
        db.inTransaction(c -> Sql.update(c, CREATE_INDEX));
        return db;
    }

    /** Two rows in three are deleted after their last state, so that chunks go sparse; which ones is fixed, so the check knows. */
    static boolean deletedAtTheEnd(long id) {
        return id % 3 != 0;
    }

    /**
     * The process that is killed: commits until it dies, printing {@code <id> <state>} after each
     * commit returned ({@code 0}: the row's delete), and {@code ready} once the database is open.
     */
    static final class Writer {
        private Writer() {
        }

        public static void main(String[] args) throws InterruptedException {
            Path dir = Path.of(args[0]);
            String urlSettings = args[1];
            AtomicLong ids = new AtomicLong(Long.parseLong(args[2]));
            long seed = Long.parseLong(args[3]);
            PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
            Database db = open(dir, urlSettings);
            out.println("ready");
            out.flush();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                Random random = new Random(seed + t);
                threads.add(Thread.ofPlatform().start(() -> {
                    while (true) {
                        long id = ids.getAndIncrement();
                        commit(db, out, id, 1, c -> Sql.update(c, "INSERT INTO kill_rows (id, state, pad) VALUES (?, 1, ?)", id, pad(random)));
                        for (int state = 2; state <= STATES; state++) {
                            int s = state;
                            commit(db, out, id, s, c -> Sql.update(c, "UPDATE kill_rows SET state = ?, pad = ? WHERE id = ?", s, pad(random), id));
                        }
                        if (deletedAtTheEnd(id)) {
                            // Said before the delete, so that a row missing without it is a loss, not a delete unprinted.
                            print(out, id, DELETING);
                            commit(db, out, id, 0, c -> Sql.update(c, "DELETE FROM kill_rows WHERE id = ?", id));
                        }
                    }
                }));
            }
            for (Thread thread : threads) {
                thread.join();
            }
        }

        private static void commit(Database db, PrintStream out, long id, int state, Database.SqlWork<Integer> work) {
            int rows = db.inTransaction(work);
            if (rows != 1) {
                throw new IllegalStateException("row " + id + " state " + state + ": " + rows + " rows");
            }
            print(out, id, state);
        }

        private static void print(PrintStream out, long id, int state) {
            synchronized (out) {
                out.println(id + " " + state);
                out.flush();
            }
        }

        private static String pad(Random random) {
            StringBuilder pad = new StringBuilder();
            int length = 50 + random.nextInt(350);
            for (int i = 0; i < length; i++) {
                pad.append((char) ('a' + random.nextInt(26)));
            }
            return pad.toString();
        }
    }
}
