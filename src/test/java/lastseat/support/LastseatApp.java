package lastseat.support;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.stubbing.ServeEvent;
import lastseat.Services;
import lastseat.testkit.LastseatClient;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.List;
import java.util.Map;

/**
 * The app of a test class, as a JUnit extension that owns its lifecycle. Declared once per class:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final LastseatApp app = LastseatApp.shared();                                  // the JVM's shared app
 * @RegisterExtension
 * static final LastseatApp app = LastseatApp.with(Map.of("purchase.deadline", "3s"));  // an app of its own
 * }</pre>
 *
 * <p>Contract: the app is started before the class's first test ({@code @BeforeAll} methods see it
 * running); its stubs are reset to the file mappings, with an empty journal and ledger, before each
 * test, and so before the class's own {@code @BeforeEach} methods add theirs; an app with settings is
 * closed after the class's last test and {@code @AfterAll} method; the shared one, started once per
 * JVM, is never closed by a class. The field's accessors ({@link #client()}, {@link #db()},
 * {@link #stubs()}, {@link #services()}) start the app on first use, so that code running before this
 * extension's callbacks — another extension's setup such as {@code @ServerTest}'s routing, or a static
 * initializer — finds it running too.
 *
 * <p>Hazard: the field must be {@code static}. JUnit registers an instance field only once the test
 * instance exists, too late for the class's callbacks: its app would start on first use and never be
 * closed, so {@link #beforeEach} refuses one. And the ledger and in-flight meter the stubs keep are one
 * per JVM: resetting one app's stubs empties them for every app, so the tests of one JVM run one at a time.
 */
public final class LastseatApp implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback {
    private final Map<String, String> settings;
    private TestApp app;
    private boolean registeredOnTheClass;
    private boolean closed;

    private LastseatApp(Map<String, String> settings) {
        this.settings = Map.copyOf(settings);
    }

    /** The shared app (see {@link TestApp#shared()}), for a class that needs no settings of its own. */
    public static LastseatApp shared() {
        return new LastseatApp(Map.of());
    }

    /** An app of the class's own, with these configuration keys (such as {@code purchase.deadline}) over the tests' defaults. */
    public static LastseatApp with(Map<String, String> settings) {
        if (settings.isEmpty()) {
            throw new IllegalArgumentException("an app without settings is the shared one: LastseatApp.shared()");
        }
        return new LastseatApp(settings);
    }

    @Override
    public synchronized void beforeAll(ExtensionContext context) {
        registeredOnTheClass = true;
        testApp();
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        synchronized (this) {
            if (!registeredOnTheClass) {
                throw new IllegalStateException("a LastseatApp field must be static: " + context.getRequiredTestClass().getName()
                                                + " would start an app and never close it");
            }
        }
        testApp().resetStubs();
    }

    @Override
    public synchronized void afterAll(ExtensionContext context) {
        // A @Nested class runs the callbacks of its outer class's extensions too: only the outer class closes the app.
        if (context.getParent().flatMap(ExtensionContext::getTestClass).isPresent()) {
            return;
        }
        closed = true;
        if (app != null && !isShared()) {
            app.close();
        }
        app = null;
    }

    /** The running app, started on first use. */
    public synchronized TestApp testApp() {
        if (closed) {
            throw new IllegalStateException("this class's app was closed after its last test");
        }
        if (app == null) {
            app = isShared() ? TestApp.shared() : TestApp.start(settings);
        }
        return app;
    }

    public LastseatClient client() {
        return testApp().client;
    }

    public Db db() {
        return testApp().db;
    }

    public WireMockServer stubs() {
        return testApp().stubs;
    }

    public Services services() {
        return testApp().services();
    }

    public String newEvent(int capacity) {
        return testApp().newEvent(capacity);
    }

    public String newEvent(String... seats) {
        return testApp().newEvent(seats);
    }

    /** File stubs only, an empty journal and ledger: done before each test; again when a test needs it mid-way. */
    public void resetStubs() {
        testApp().resetStubs();
    }

    /** See {@link TestApp#purchaseCalls()}. */
    public List<ServeEvent> purchaseCalls() {
        return testApp().purchaseCalls();
    }

    private boolean isShared() {
        return settings.isEmpty();
    }
}
