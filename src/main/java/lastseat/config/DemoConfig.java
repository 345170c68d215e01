package lastseat.config;

import java.util.Optional;

/**
 * The {@code demo} section: what bin/run sets up so that a newcomer can try lastseat at once.
 *
 * <p>Hazard: the demo keys are fixed values printed in the README and every banner; a deployment that
 * turns {@code demo.create-keys} on gives anyone who read them an operator's power.
 *
 * @param createEvent {@code demo.create-event}: create the event "demo" (seats A1-A5, B1-B5) on first
 *                    start; bin/run sets it, and leaving the key out leaves it off
 * @param keys        {@code demo.create-keys} with {@code demo.operator-key} and {@code demo.client-key}:
 *                    installed at start as the keys named "operator" and "demo-shop"; empty when off
 * @param operatorKey {@code demo.operator-key}, whether the demo is on or not (off, it is revoked wherever it is)
 * @param clientKey   {@code demo.client-key}, likewise
 */
public record DemoConfig(boolean createEvent, Optional<Keys> keys, String operatorKey, String clientKey) {

    /** The demo's two fixed keys. */
    public record Keys(String operator, String client) {
        public Keys {
            AccessConfig.key("demo.operator-key", operator);
            AccessConfig.key("demo.client-key", client);
            if (operator.equals(client)) {
                throw new IllegalStateException("Configuration demo.operator-key and demo.client-key must differ");
            }
        }
    }

    static DemoConfig read(Reader keys) {
        boolean createEvent = keys.flag("demo.create-event", false);
        boolean createKeys = keys.flag("demo.create-keys", false);
        String operator = keys.string("demo.operator-key");
        String client = keys.string("demo.client-key");
        Keys demo = new Keys(operator, client);
        return new DemoConfig(createEvent, createKeys ? Optional.of(demo) : Optional.empty(), operator, client);
    }
}
