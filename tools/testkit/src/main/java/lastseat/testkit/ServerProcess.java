package lastseat.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A lastseat in a process of its own, for the drills, tests and benchmarks that must kill it
 * ({@code kill -9}), stop it (SIGTERM) or run it with settings of their own: the caller's JDK, H2 in
 * {@code dataDir}, the given stubs. Closing kills it if it is still alive; every wait is bounded.
 */
public final class ServerProcess implements AutoCloseable {
    private static final Duration START_WAIT = Duration.ofSeconds(60);
    /** Starts tried, each on new ports, while the process finds its port taken. */
    private static final int PORT_ATTEMPTS = 3;
    /** Any answer to it (404) says the public port listens. */
    private static final String READINESS_PROBE = "/events/no-such-event-readiness-probe";
    /**
     * The JVM options lastseat runs with, the argument file bin/run passes too; relative to the project's top
     * directory, where the tests, bin/drill and bin/bench run.
     */
    private static final Path JVM_OPTIONS = Path.of("src", "main", "resources", "jvm.options");
    private final Process process;
    private final Instance instance;
    private final Path log;

    private ServerProcess(Process process, Instance instance, Path log) {
        this.process = process;
        this.instance = instance;
        this.log = log;
    }

    /**
     * Starts lastseat with drills enabled, the demo keys ({@link Instance#DEMO_OPERATOR_KEY} and
     * {@link Instance#DEMO_CLIENT_KEY}) and {@code settings} as system properties; returns once it is healthy.
     */
    public static ServerProcess start(Path dataDir, URI stubs, Map<String, String> settings) {
        return start(dataDir, stubs, settings, List.of());
    }

    /**
     * {@link #start(Path, URI, Map)} with JVM options of its own ({@code -XX:AOTCacheOutput=…}, say), given after
     * {@code jvm.options} and before {@code LASTSEAT_JAVA_OPTS}.
     */
    public static ServerProcess start(Path dataDir, URI stubs, Map<String, String> settings, List<String> jvmOptions) {
        for (int attempt = 1; ; attempt++) {
            try {
                return startOnce(dataDir, stubs, settings, jvmOptions);
            } catch (PortTaken e) {
                // A port found free is closed again before the process binds it, seconds later; meanwhile
                // any outgoing connection of the machine may take it as its local port. New ports, then.
                if (attempt == PORT_ATTEMPTS) {
                    throw e;
                }
            }
        }
    }

    private static ServerProcess startOnce(Path dataDir, URI stubs, Map<String, String> settings, List<String> jvmOptions) {
        try {
            Files.createDirectories(dataDir);
            int port = freePort();
            int adminPort = freePort();
            Path log = dataDir.resolve("lastseat-" + port + ".log");
            if (!Files.isRegularFile(JVM_OPTIONS)) {
                throw new IllegalStateException("no " + JVM_OPTIONS + " under " + Path.of("").toAbsolutePath()
                                                + ": lastseat is started from the project's top directory");
            }
            List<String> command = new ArrayList<>(List.of(
                    ProcessHandle.current().info().command().orElse("java"), "--enable-preview",
                    "@" + JVM_OPTIONS.toAbsolutePath(),
                    "-Dserver.port=" + port, "-Dserver.host=127.0.0.1", "-Daccess.admin-port=" + adminPort,
                    "-Ddemo.create-keys=true",
                    "-Doutside.base-url=" + stubs.toString().replaceAll("/$", ""),
                    "-Ddb.url=jdbc:h2:file:" + dataDir.resolve("lastseat").toAbsolutePath(),
                    "-Ddrills.enabled=true"));
            // The test build asks for a short warm-up (pom.xml); bin/drill and bin/bench leave the product's own.
            String warmUp = System.getProperty("lastseat.test.warm-up.purchases");
            if (warmUp != null && !settings.containsKey("warm-up.purchases")) {
                command.add("-Dwarm-up.purchases=" + warmUp);
            }
            settings.forEach((key, value) -> command.add("-D" + key + "=" + value));
            command.addAll(jvmOptions);
            // LASTSEAT_JAVA_OPTS reaches these servers as it reaches bin/run's (a profiler, say).
            String extra = System.getenv("LASTSEAT_JAVA_OPTS");
            if (extra != null && !extra.isBlank()) {
                command.addAll(List.of(extra.trim().split("\\s+")));
            }
            command.addAll(List.of("-cp", classpath(), "lastseat.Main"));
            Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            ServerProcess server = new ServerProcess(process, Instance.local(port, adminPort), log);
            server.awaitHealthy();
            return server;
        } catch (IOException e) {
            throw new UncheckedIOException("could not start lastseat: " + e.getMessage(), e);
        }
    }

    /** The public port's address. */
    public URI url() {
        return instance.api();
    }

    /** Its ports and the demo keys. */
    public Instance instance() {
        return instance;
    }

    public long pid() {
        return process.pid();
    }

    /**
     * Writes the process's threads (jcmd Thread.print) next to its log, for a drill that found it
     * stuck; returns the file, or why there is none.
     */
    public String threadDump() {
        Path dump = log.resolveSibling(log.getFileName().toString().replace(".log", "-threads.txt"));
        String jcmd = ProcessHandle.current().info().command().map(java -> java.replaceAll("java$", "jcmd")).orElse("jcmd");
        try {
            Process p = new ProcessBuilder(jcmd, Long.toString(process.pid()), "Thread.print")
                    .redirectErrorStream(true).redirectOutput(dump.toFile()).start();
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
            return dump.toString();
        } catch (IOException e) {
            return "(no thread dump: " + e.getMessage() + ")";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "(no thread dump: interrupted)";
        }
    }

    /** SIGKILL, as {@code kill -9}: no shutdown hook runs, nothing is flushed or finished. */
    public void kill() {
        process.destroyForcibly();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("lastseat did not die within 10 s of SIGKILL");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while killing lastseat", e);
        }
    }

    /**
     * SIGTERM, as a rolling deploy stops an instance, and waits (at most {@code bound}) for the
     * process to exit; its exit code, or empty when it is still alive then.
     */
    public java.util.OptionalInt terminate(Duration bound) {
        process.destroy();
        try {
            return process.waitFor(bound.toMillis(), TimeUnit.MILLISECONDS)
                    ? java.util.OptionalInt.of(process.exitValue()) : java.util.OptionalInt.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while lastseat stopped", e);
        }
    }

    /** The log it wrote. */
    public Path log() {
        return log;
    }

    /** Stops it as an operator would (SIGTERM, so shutdown hooks and a profiler's dump run), then SIGKILL after 10 s. */
    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroy();
            try {
                if (process.waitFor(10, TimeUnit.SECONDS)) {
                    return;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            kill();
        }
    }

    /**
     * lastseat's classpath: {@code -Dlastseat.classpath} (bin/drill sets it to the service's jar and
     * libraries), else the caller's own, which holds the service when the service is among its
     * dependencies (under Maven's test runner the real one is in surefire.test.class.path).
     */
    private static String classpath() {
        String explicit = System.getProperty("lastseat.classpath");
        if (explicit != null && !explicit.isBlank()) {
            return explicit;
        }
        return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private void awaitHealthy() {
        long until = System.nanoTime() + START_WAIT.toNanos();
        try (LastseatClient client = new LastseatClient(instance, Duration.ofSeconds(1), Duration.ofSeconds(2))) {
            while (System.nanoTime() < until) {
                if (!process.isAlive()) {
                    // The bind's failure may lie further up than the tail: the stack of the start-up that failed follows it.
                    String bind = loggedLine("java.net.BindException");
                    throw bind != null ? new PortTaken("lastseat could not bind its port (" + bind.trim() + "): " + tail())
                            : new IllegalStateException("lastseat stopped while starting: " + tail());
                }
                try {
                    // Healthy on the admin port and answering on the public one: the two listen one after the
                    // other, and a test's first purchase must not meet a port not yet bound.
                    if (client.health().status() == 200) {
                        client.get(READINESS_PROBE);
                        return;
                    }
                } catch (UncheckedIOException notYet) {
                    // not listening yet
                }
                Thread.sleep(100);
            }
            throw new IllegalStateException("lastseat did not become healthy within " + START_WAIT.toSeconds() + " s: " + tail());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            close();
            throw new IllegalStateException("interrupted while lastseat started", e);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** The first line of the log that holds {@code text}; null when none does or there is no log. */
    private String loggedLine(String text) {
        try (var lines = Files.lines(log)) {
            return lines.filter(line -> line.contains(text)).findFirst().orElse(null);
        } catch (IOException | UncheckedIOException e) {
            return null;
        }
    }

    private String tail() {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    /** The process stopped because its port was taken between our finding it free and its binding it. */
    private static final class PortTaken extends IllegalStateException {
        PortTaken(String message) {
            super(message);
        }
    }
}
