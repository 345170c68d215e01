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
 */
public record DemoConfig(boolean createEvent, Optional<Keys> keys) {

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
        return new DemoConfig(createEvent, createKeys ? Optional.of(new Keys(operator, client)) : Optional.empty());
    }
}
