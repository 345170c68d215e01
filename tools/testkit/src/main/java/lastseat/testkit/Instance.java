package lastseat.testkit;

import java.net.URI;

/**
 * A lastseat as its callers reach it: the public port ({@code api}: events and purchases), the admin port
 * ({@code admin}: /observe, /outbox, /drills, /admin) and the two keys a test, a drill or the benchmark
 * calls with — the operator's, and one client's (a ticket shop's backend).
 *
 * <p>The demo keys are the fixed values bin/run, the tests and the drills install
 * ({@code demo.create-keys}); they are public, for trying lastseat only.
 */
public record Instance(URI api, URI admin, String operatorKey, String clientKey) {
    public static final String DEMO_OPERATOR_KEY = "ls_0000000000000001_00000000000000000000000000000001";
    public static final String DEMO_CLIENT_KEY = "ls_0000000000000002_00000000000000000000000000000002";

    /** A lastseat on this machine at these ports, with the demo keys. */
    public static Instance local(int apiPort, int adminPort) {
        return new Instance(URI.create("http://127.0.0.1:" + apiPort), URI.create("http://127.0.0.1:" + adminPort),
                            DEMO_OPERATOR_KEY, DEMO_CLIENT_KEY);
    }

    /** The same lastseat, called by another client. */
    public Instance withClientKey(String key) {
        return new Instance(api, admin, operatorKey, key);
    }

    /** Whether {@code path} is served on the admin port. */
    public static boolean adminPath(String path) {
        return path.startsWith("/observe") || path.startsWith("/outbox") || path.startsWith("/drills") || path.startsWith("/admin");
    }
}
