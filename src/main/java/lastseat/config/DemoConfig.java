package lastseat.config;

/**
 * The {@code demo} section: what bin/run sets up so that a newcomer can try lastseat at once. Each key
 * is checked here on its own (a demo key has the key format); that the two keys differ, and that the
 * demo's keys and {@code access.operator-key} are not both on, are rules between keys, checked with
 * the others in {@link LastseatConfig}.
 *
 * <p>Hazard: the demo keys are fixed values printed in the README and every banner; a deployment that
 * turns {@code demo.create-keys} on gives anyone who read them an operator's power.
 *
 * @param createEvent {@code demo.create-event}: create the event "demo" (seats A1-A5, B1-B5) on first
 *                    start; bin/run sets it, application.yaml ships it false
 * @param createKeys  {@code demo.create-keys}: install {@code operatorKey} and {@code clientKey} at start as
 *                    the keys named "operator" and "demo-shop"; off, they are revoked wherever they are
 * @param operatorKey {@code demo.operator-key}, whether the demo is on or not
 * @param clientKey   {@code demo.client-key}, likewise
 */
public record DemoConfig(boolean createEvent, boolean createKeys, String operatorKey, String clientKey) {

    public DemoConfig {
        AccessConfig.key("demo.operator-key", operatorKey);
        AccessConfig.key("demo.client-key", clientKey);
    }

    static DemoConfig read(Reader keys) {
        return new DemoConfig(keys.flag("demo.create-event"), keys.flag("demo.create-keys"), keys.string("demo.operator-key"),
                              keys.string("demo.client-key"));
    }
}
