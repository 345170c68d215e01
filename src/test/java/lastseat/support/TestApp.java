package lastseat.support;

import com.github.tomakehurst.wiremock.WireMockServer;
import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import lastseat.Main;
import lastseat.Services;
import lastseat.testkit.InFlight;
import lastseat.testkit.Instance;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.Ledger;
import lastseat.testkit.StubServer;
import lastseat.testkit.TempDirs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;


/**
 * A real lastseat: the Helidon server on a free port, H2 in a file under a temporary directory, and
 * WireMock serving {@code wiremock/} with the ledger extension. {@link #shared()} is started once
 * per test JVM and reused by every class that does not need its own settings.
 *
 * <p>Test classes do not start or close one by hand: {@link LastseatApp}, a JUnit extension, owns
 * their app's lifecycle. {@link #start} is left for a test whose subject is an app stopping.
 */
public final class TestApp implements AutoCloseable {
    private static TestApp shared;

    public final WireMockServer stubs;
    public final Main.Running running;
    public final LastseatClient client;
    public final Db db;
    private final Path dataDir;

    private TestApp(WireMockServer stubs, Main.Running running, Path dataDir) {
        this.stubs = stubs;
        this.dataDir = dataDir;
        this.running = running;
        this.client = new LastseatClient(Instance.local(running.port(), running.adminPort()));
        this.db = new Db(running.services().db());
    }

    /** The app of every class without settings of its own, started on first use. Never closed before the JVM ends. */
    public static synchronized TestApp shared() {
        if (shared == null) {
            shared = start(Map.of());
            Runtime.getRuntime().addShutdownHook(new Thread(shared::close));
        }
        return shared;
    }

    /** WireMock as the tests run it (not started): see {@link StubServer}. */
    public static WireMockServer stubServer() {
        return StubServer.create();
    }

    /** Starts a separate app; {@code overrides} are configuration keys such as {@code purchase.deadline}. */
    public static TestApp start(Map<String, String> overrides) {
        WireMockServer stubs = stubServer();
        stubs.start();
        Path dataDir;
        try {
            dataDir = Files.createTempDirectory("lastseat-test");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, String> settings = new HashMap<>();
        settings.put("server.port", "0");
        settings.put("server.host", "127.0.0.1");
        settings.put("access.admin-port", "0");
        // The demo's fixed keys (Instance.DEMO_*): the operator's, and the client "demo-shop" every test buys as.
        settings.put("demo.create-keys", "true");
        settings.put("outside.base-url", "http://127.0.0.1:" + stubs.port());
        settings.put("db.url", "jdbc:h2:file:" + dataDir.resolve("lastseat"));
        // A call that ignored its interrupt would now overrun the deadline by a second, which every
        // timing assertion (deadline + 150 ms) catches; in production the backstop is 100 ms.
        settings.put("outside.deadline-backstop", "1s");
        // A hundred connections opened at once to WireMock on two busy cores can take longer than the
        // 250 ms production default; these tests are not about connecting.
        settings.put("outside.connect-timeout", "1s");
        settings.put("drills.enabled", "true");
        // Several apps share a test JVM, and a warm-up removes the meters its throwaway copy made
        // (Warmup's hazard); each app makes one purchase of its own below instead. WarmupTest turns it on.
        settings.put("warm-up.purchases", "0");
        settings.putAll(overrides);
        Config config = Config.just(ConfigSources.create(settings), ConfigSources.classpath("application.yaml"));
        Main.Running running = Main.start(config);
        TestApp app = new TestApp(stubs, running, dataDir);
        app.warmUp();
        return app;
    }

    public Services services() {
        return running.services();
    }

    /** File stubs only, an empty journal and ledger. */
    public void resetStubs() {
        stubs.resetToDefaultMappings();
        stubs.resetScenarios();
        stubs.resetRequests();
        Ledger.clear();
        InFlight.reset();
    }

    /**
     * The calls a purchase makes (fraud, tax, payment), leaving out the background jobs' own
     * traffic (reconciliation lookups, outbox deliveries) that may arrive at any moment.
     */
    public java.util.List<com.github.tomakehurst.wiremock.stubbing.ServeEvent> purchaseCalls() {
        return stubs.getAllServeEvents().stream()
                .filter(e -> e.getRequest().getMethod().getName().equals("POST"))
                .filter(e -> java.util.List.of("/fraud/checks", "/tax/quotes", "/payments")
                        .contains(e.getRequest().getUrl().split("\\?")[0]))
                .toList();
    }

    public String newEvent(int capacity) {
        return client.newEvent(capacity);
    }

    public String newEvent(String... seats) {
        return client.newEvent(seats);
    }

    /**
     * The first purchase loads many classes; run one before anything is timed. Its traffic stays in
     * the stubs until the next {@link #resetStubs()}, which {@link LastseatApp} does before each test:
     * one reset, not two in a row, because each races the app's own outbox worker delivering the
     * warm-up's email (a delivery cut by a reset is retried, and can die under a test's own fault).
     */
    private void warmUp() {
        String event = newEvent(1);
        client.purchaseSeats(UUID.randomUUID().toString(), event, "1");
    }

    @Override
    public void close() {
        running.close();
        stubs.stop();
        // Its database file is nobody's once it is stopped; a full test run left eighty of them behind.
        TempDirs.deleteQuietly(dataDir);
    }
}
