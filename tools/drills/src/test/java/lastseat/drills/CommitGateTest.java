package lastseat.drills;

import com.sun.jdi.ArrayReference;
import com.sun.jdi.Bootstrap;
import com.sun.jdi.IntegerValue;
import com.sun.jdi.ObjectReference;
import com.sun.jdi.ReferenceType;
import com.sun.jdi.StackFrame;
import com.sun.jdi.ThreadReference;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.connect.AttachingConnector;
import com.sun.jdi.connect.Connector;
import com.sun.jdi.event.BreakpointEvent;
import com.sun.jdi.event.Event;
import com.sun.jdi.event.EventSet;
import com.sun.jdi.request.BreakpointRequest;
import com.sun.jdi.request.EventRequest;
import lastseat.db.Database;
import lastseat.db.Sql;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Scanner;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The race behind {@code H2CommitGate}, made to happen with a debugger instead of waited for: a process
 * with two committers on an H2 file is driven through JDI so that committer A stops inside its commit
 * (its row's table entry committed, its index entry not yet) while committer B commits. Without the
 * gate, B's chunk is written with A's index entry collected before A finished and A's undo log after A
 * cleared it; killed then, the file holds a row the table has and its index does not, and no leftover
 * tells the open to finish it. With the service's connections, B waits at the gate until A's commit has
 * ended, and the file killed after both holds both rows whole. The file has been opened once before, as
 * after any restart: H2 then makes its undo logs after the tables, so it collects them after the tables.
 */
class CommitGateTest {
    private static final String INSERT = "INSERT INTO kill_rows (id, state, pad) VALUES (?, 1, 'pad')";
    private static final long TIMEOUT_MILLIS = 60_000;

    @Test
    void withoutTheGateAKillKeepsACommitsTableEntryWithoutItsIndexEntry(@TempDir Path dir) throws Exception {
        KillCommits.open(dir, "").close();

        try (Committers committers = Committers.start(dir, "plain")) {
            BreakpointEvent inCommit = committers.stopAInsideItsCommit();
            ObjectReference undoLogOfA = undoLogOf(inCommit);
            BreakpointRequest collecting = committers.breakpoint("org.h2.mvstore.MVMap", "setWriteVersion", committers.b);
            collecting.addInstanceFilter(undoLogOfA);
            collecting.enable();
            committers.send("b");
            committers.await(collecting);   // B is writing a chunk: A's index entry is in it, A's undo log not yet

            BreakpointRequest storing = committers.breakpoint("org.h2.mvstore.MVStore", "commit", committers.a);
            storing.enable();
            committers.a.resume();
            committers.await(storing);      // A has committed its index entry and cleared its undo log, not written them
            collecting.disable();
            committers.b.resume();
            committers.awaitLine("b committed");
        }

        List<Map<Long, String>> views = views(dir);
        assertThat(views).as("A's row and B's in the table, as both transactions read it")
                .allSatisfy(view -> assertThat(view).containsEntry(2L, "1"))
                .satisfies(v -> assertThat(v.get(0)).containsEntry(1L, "1"), v -> assertThat(v.get(2)).containsEntry(1L, "1"));
        assertThat(List.of(views.get(1), views.get(3))).as("A's row missing from its index, for one transaction at least")
                .anySatisfy(index -> assertThat(index).doesNotContainKey(1L));
        assertThat(ProcessHandle.current().children()).as("the committers' process was killed and reaped").isEmpty();
    }

    @Test
    void withTheServicesConnectionsACommitWaitsAtTheGateAndTheFileStaysWhole(@TempDir Path dir) throws Exception {
        KillCommits.open(dir, "").close();

        try (Committers committers = Committers.start(dir, "gated")) {
            committers.stopAInsideItsCommit();
            committers.send("b");
            committers.awaitWaitingAtTheGate(committers.b);   // A holds the gate half way through its commit

            committers.disableAll();
            committers.a.resume();
            committers.awaitLine("a committed");
            committers.awaitLine("b committed");
        }

        List<Map<Long, String>> views = views(dir);
        assertThat(views.getFirst()).containsEntry(1L, "1").containsEntry(2L, "1");
        assertThat(views).as("every row's index entry agrees with its table entry, for both transactions")
                .allSatisfy(view -> assertThat(view).isEqualTo(views.getFirst()));
        assertThat(ProcessHandle.current().children()).as("the committers' process was killed and reaped").isEmpty();
    }

    @Test
    void withUndoLogsCollectedFirstAKillKeepsAStatementsIndexEntryThatNothingUndoes(@TempDir Path dir) throws Exception {
        KillCommits.open(dir, "").close();
        List<String> order;
        try (Committers committers = Committers.start(dir, "plain", "hold")) {
            order = committers.collectBWhileAsInsertIsHalfWay();
        }

        assertThat(order).as("B's chunk took A's undo log before the index: the new file's undo log is the older map")
                .containsExactly("undo log", "index");
        List<Map<Long, String>> views = views(dir);
        assertThat(views).as("B's row whole; A's row, never committed, in no table view")
                .allSatisfy(view -> assertThat(view).containsEntry(2L, "1"))
                .satisfies(v -> assertThat(v.get(0)).doesNotContainKey(1L), v -> assertThat(v.get(2)).doesNotContainKey(1L));
        assertThat(List.of(views.get(1), views.get(3))).as("A's index entry left behind, uncommitted for good, for one transaction at least")
                .anySatisfy(index -> assertThat(index).containsKey(1L));
        assertThat(ProcessHandle.current().children()).as("the committers' process was killed and reaped").isEmpty();
    }

    @Test
    void withTheServicesConnectionsUndoLogsAreCollectedLastAndAStatementHalfWayIsUndoneWhole(@TempDir Path dir) throws Exception {
        List<String> order;
        try (Committers committers = Committers.start(dir, "gated", "hold")) {
            order = committers.collectBWhileAsInsertIsHalfWay();
        }

        assertThat(order).as("B's chunk took the index first; A's undo log comes after every other map").containsExactly("index");
        List<Map<Long, String>> views = views(dir);
        assertThat(views.getFirst()).containsEntry(2L, "1").doesNotContainKey(1L);
        assertThat(views).as("every row's index entry agrees with its table entry, for both transactions")
                .allSatisfy(view -> assertThat(view).isEqualTo(views.getFirst()));
        assertThat(ProcessHandle.current().children()).as("the committers' process was killed and reaped").isEmpty();
    }

    /** The transaction store's undo log of the transaction committing at {@code inCommit}. */
    private static ObjectReference undoLogOf(BreakpointEvent inCommit) throws Exception {
        ObjectReference decisionMaker = inCommit.thread().frame(0).thisObject();
        int transactionId = ((IntegerValue) decisionMaker.getValue(decisionMaker.referenceType().fieldByName("transactionId"))).value();
        ObjectReference store = inCommit.thread().frame(1).thisObject();
        ArrayReference undoLogs = (ArrayReference) store.getValue(store.referenceType().fieldByName("undoLogs"));
        return (ObjectReference) undoLogs.getValue(transactionId);
    }

    private static String plainUrl(Path dir) {
        return "jdbc:h2:async:" + dir.resolve("kill").toAbsolutePath() + ";WRITE_DELAY=0;REUSE_SPACE=FALSE;DB_CLOSE_ON_EXIT=FALSE";
    }

    /** The file opened as the service opens it (leftovers finished): {@link KillCommits#views}. */
    private static List<Map<Long, String>> views(Path dir) {
        try (Database db = KillCommits.open(dir, "")) {
            return KillCommits.views(db);
        }
    }

    /** The process under the debugger, and the debugger's hold on it; closing kills it (SIGKILL). */
    private static final class Committers implements AutoCloseable {
        private final Process process;
        private final VirtualMachine vm;
        private final BlockingQueue<String> lines;
        private final PrintStream commands;
        private final List<String> said = new java.util.ArrayList<>();
        final ThreadReference a;
        final ThreadReference b;

        private Committers(Process process, VirtualMachine vm, BlockingQueue<String> lines) {
            this.process = process;
            this.vm = vm;
            this.lines = lines;
            this.commands = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
            this.a = thread("committer-a");
            this.b = thread("committer-b");
        }

        static Committers start(Path dir, String arm) throws Exception {
            return start(dir, arm, "commit");
        }

        /** {@code a}: {@code commit}, or {@code hold} (A inserts its row and never commits; the file is new). */
        static Committers start(Path dir, String arm, String a) throws Exception {
            Process process = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "--enable-preview",
                                                 "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:0",
                                                 "-cp", System.getProperty("java.class.path"), Committer.class.getName(), dir.toString(), arm, a)
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
            BlockingQueue<String> lines = new LinkedBlockingQueue<>();
            Thread.ofPlatform().daemon().start(() -> {
                try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line; (line = out.readLine()) != null; ) {
                        lines.add(line);
                    }
                } catch (java.io.IOException e) {
                    lines.add("stdout failed: " + e);
                }
            });
            try {
                Matcher port = Pattern.compile("Listening for transport dt_socket at address: (\\d+)").matcher(next(lines));
                assertThat(port.find()).as("the debug agent's port").isTrue();
                AttachingConnector attach = Bootstrap.virtualMachineManager().attachingConnectors().stream()
                        .filter(c -> c.name().equals("com.sun.jdi.SocketAttach")).findFirst().orElseThrow();
                Map<String, Connector.Argument> arguments = attach.defaultArguments();
                arguments.get("hostname").setValue("127.0.0.1");
                arguments.get("port").setValue(port.group(1));
                VirtualMachine vm = attach.attach(arguments);
                assertThat(next(lines)).isEqualTo("ready");
                return new Committers(process, vm, lines);
            } catch (Exception | AssertionError e) {
                process.destroyForcibly().waitFor();
                throw e;
            }
        }

        private static String next(BlockingQueue<String> lines) throws InterruptedException {
            String line = lines.poll(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            assertThat(line).as("the committers' next line").isNotNull();
            return line;
        }

        private ThreadReference thread(String name) {
            return vm.allThreads().stream().filter(t -> t.name().equals(name)).findFirst().orElseThrow();
        }

        /** A stopped at its second undo entry's commit: its row's table entry committed, its index entry not. */
        BreakpointEvent stopAInsideItsCommit() throws InterruptedException {
            BreakpointRequest inCommit = breakpoint("org.h2.mvstore.tx.CommitDecisionMaker", "setUndoKey", a);
            inCommit.addCountFilter(2);
            inCommit.enable();
            send("a");
            BreakpointEvent event = await(inCommit);
            inCommit.disable();
            return event;
        }

        /**
         * A stopped inside its insert, its row's table entry made and its index entry not; B committing,
         * stopped where its chunk takes the index; A let finish its statement (not its transaction); B let
         * finish; what B's chunk took before the index, in order, ending with "index".
         */
        List<String> collectBWhileAsInsertIsHalfWay() throws Exception {
            BreakpointRequest inInsert = breakpoint("org.h2.mvstore.db.MVSecondaryIndex", "add", a);
            inInsert.enable();
            send("a");
            BreakpointEvent halfWay = await(inInsert);
            inInsert.disable();
            ObjectReference index = field(field(halfWay.thread().frame(0).thisObject(), "dataMap"), "map");
            ObjectReference transaction = field(field(halfWay.thread().frame(0).thisObject(), "dataMap"), "transaction");
            int transactionId = ((IntegerValue) transaction.getValue(transaction.referenceType().fieldByName("transactionId"))).value();
            ArrayReference undoLogs = (ArrayReference) field(transaction, "store").getValue(
                    field(transaction, "store").referenceType().fieldByName("undoLogs"));
            ObjectReference undoLog = (ObjectReference) undoLogs.getValue(transactionId);

            BreakpointRequest undoLogTaken = breakpoint("org.h2.mvstore.MVMap", "setWriteVersion", b);
            undoLogTaken.addInstanceFilter(undoLog);
            undoLogTaken.enable();
            BreakpointRequest indexTaken = breakpoint("org.h2.mvstore.MVMap", "setWriteVersion", b);
            indexTaken.addInstanceFilter(index);
            indexTaken.enable();
            send("b");
            List<String> order = new java.util.ArrayList<>();
            while (true) {
                BreakpointEvent taken = awaitAny(undoLogTaken, indexTaken);
                if (taken.request() == indexTaken) {
                    order.add("index");
                    break;
                }
                order.add("undo log");
                undoLogTaken.disable();
                b.resume();
            }
            indexTaken.disable();
            undoLogTaken.disable();
            a.resume();
            awaitLine("a inserted");   // A's index entry made, and its undo record: after B took the undo log, or before
            b.resume();
            awaitLine("b committed");
            return order;
        }

        private static ObjectReference field(ObjectReference object, String name) {
            return (ObjectReference) object.getValue(object.referenceType().fieldByName(name));
        }

        /** The thread stopped at one of {@code requests}; other events let go. */
        BreakpointEvent awaitAny(BreakpointRequest... requests) throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MILLIS);
            while (System.nanoTime() < end) {
                EventSet events = vm.eventQueue().remove(1_000);
                if (events == null) {
                    continue;
                }
                for (Event event : events) {
                    if (event instanceof BreakpointEvent hit && List.of(requests).contains(hit.request())) {
                        return hit;
                    }
                }
                events.resume();
            }
            throw new AssertionError("no stop at " + requests[0].location() + " within " + TIMEOUT_MILLIS + " ms");
        }

        BreakpointRequest breakpoint(String type, String method, ThreadReference thread) {
            ReferenceType owner = vm.classesByName(type).getFirst();
            BreakpointRequest request = vm.eventRequestManager().createBreakpointRequest(
                    owner.methodsByName(method).stream().filter(m -> !m.isAbstract()).findFirst().orElseThrow().location());
            request.addThreadFilter(thread);
            request.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
            return request;
        }

        /** The thread stopped at {@code request}; other events let go. */
        BreakpointEvent await(BreakpointRequest request) throws InterruptedException {
            return awaitAny(request);
        }

        /** Until {@code thread} waits on the gate's lock inside {@code H2CommitGate}. */
        void awaitWaitingAtTheGate(ThreadReference thread) throws Exception {
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MILLIS);
            while (System.nanoTime() < end) {
                if (lines.contains("b committed") || said.contains("b committed") || thread.status() == ThreadReference.THREAD_STATUS_ZOMBIE) {
                    throw new AssertionError(thread.name() + " committed while A was half way through its commit: nothing held it");
                }
                thread.suspend();
                try {
                    List<StackFrame> frames = thread.frames();
                    boolean parked = frames.getFirst().location().declaringType().name().equals("jdk.internal.misc.Unsafe");
                    boolean atGate = frames.stream().anyMatch(f -> f.location().declaringType().name().startsWith("lastseat.db.H2CommitGate"));
                    if (parked && atGate) {
                        return;
                    }
                } catch (com.sun.jdi.IncompatibleThreadStateException e) {
                    throw new AssertionError(thread.name() + " ended while A was half way through its commit: nothing held it", e);
                } finally {
                    thread.resume();
                }
                Thread.sleep(10);
            }
            throw new AssertionError(thread.name() + " never waited at the gate");
        }

        void disableAll() {
            vm.eventRequestManager().breakpointRequests().forEach(EventRequest::disable);
        }

        void send(String command) {
            commands.println(command);
        }

        /** Until the committers have said {@code expected}, now or before. */
        void awaitLine(String expected) throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MILLIS);
            while (System.nanoTime() < end) {
                if (said.contains(expected)) {
                    return;
                }
                String line = lines.poll(100, TimeUnit.MILLISECONDS);
                if (line != null) {
                    assertThat(line).doesNotStartWith("failed");
                    said.add(line);
                }
            }
            throw new AssertionError("the committers never said: " + expected);
        }

        @Override
        public void close() throws InterruptedException {
            process.destroyForcibly();   // SIGKILL: no close, no shutdown hook, A's commit never written
            process.waitFor();
            try {
                vm.dispose();
            } catch (RuntimeException e) {
                // The process is gone; so is the connection.
            }
        }
    }

    /**
     * Two committers, {@code committer-a} (row 1) and {@code committer-b} (row 2), each started by a line
     * on stdin; {@code gated} opens the file as the service does, {@code plain} with the service's URL
     * settings and no gate.
     */
    static final class Committer {
        private Committer() {
        }

        public static void main(String[] args) throws Exception {
            Path dir = Path.of(args[0]);
            boolean gated = args[1].equals("gated");
            boolean hold = args[2].equals("hold");
            PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
            Database db = gated ? KillCommits.open(dir, "") : null;
            // Kept open to the end: the last connection's close would close the file, and the next open make new undo logs.
            Connection keeper = !gated && hold ? undoLogBeforeTheTable(dir) : null;
            CountDownLatch goA = new CountDownLatch(1);
            CountDownLatch goB = new CountDownLatch(1);
            insert(db, dir, 0);   // loads the classes the debugger stops in
            Thread.ofPlatform().name("committer-a").start(hold ? () -> insertAndHold(goA, db, dir, out) : () -> commitOn(goA, db, dir, 1, out, "a committed"));
            Thread.ofPlatform().name("committer-b").start(() -> commitOn(goB, db, dir, 2, out, "b committed"));
            out.println("ready");
            Scanner in = new Scanner(System.in, StandardCharsets.UTF_8);
            while (in.hasNextLine()) {
                switch (in.nextLine()) {
                    case "a" -> goA.countDown();
                    case "b" -> goB.countDown();
                    default -> out.println("failed: unknown command");
                }
            }
        }

        private static void commitOn(CountDownLatch go, Database db, Path dir, long id, PrintStream out, String done) {
            try {
                go.await();
                insert(db, dir, id);
                out.println(done);
            } catch (Exception e) {
                out.println("failed: " + e);
            }
        }

        /**
         * The file with its first undo log (slot 1's, which A's transaction will use) an older map than
         * kill_rows and its index, made again after it, as on a new file; the connection stays open.
         */
        private static Connection undoLogBeforeTheTable(Path dir) throws SQLException {
            Connection keeper = DriverManager.getConnection(plainUrl(dir), "sa", "");
            keeper.createStatement().execute("CREATE TABLE scratch (id INT)");
            keeper.setAutoCommit(false);
            keeper.createStatement().execute("INSERT INTO scratch VALUES (1)");
            keeper.commit();
            keeper.setAutoCommit(true);
            keeper.createStatement().execute("DROP TABLE kill_rows");
            keeper.createStatement().execute(KillCommits.CREATE_TABLE);
            keeper.createStatement().execute(KillCommits.CREATE_INDEX);
            return keeper;
        }

        /** Inserts row 1, says so, and never commits: the process is killed with A's transaction open. */
        private static void insertAndHold(CountDownLatch go, Database db, Path dir, PrintStream out) {
            try {
                go.await();
                if (db != null) {
                    db.inTransaction(c -> {
                        Sql.update(c, INSERT, 1L);
                        out.println("a inserted");
                        return holdForever();
                    });
                    return;
                }
                try (Connection c = DriverManager.getConnection(plainUrl(dir), "sa", "")) {
                    c.setAutoCommit(false);
                    try (PreparedStatement insert = c.prepareStatement(INSERT)) {
                        insert.setLong(1, 1);
                        insert.executeUpdate();
                    }
                    out.println("a inserted");
                    holdForever();
                }
            } catch (Exception e) {
                out.println("failed: " + e);
            }
        }

        private static Integer holdForever() {
            while (true) {
                java.util.concurrent.locks.LockSupport.park();
            }
        }

        private static void insert(Database db, Path dir, long id) throws SQLException {
            if (db != null) {
                db.inTransaction(c -> Sql.update(c, INSERT, id));
                return;
            }
            try (Connection c = DriverManager.getConnection(plainUrl(dir), "sa", "")) {
                c.setAutoCommit(false);
                try (PreparedStatement insert = c.prepareStatement(INSERT)) {
                    insert.setLong(1, id);
                    insert.executeUpdate();
                }
                c.commit();
            }
        }
    }
}
