package lastseat.config;

/**
 * The {@code demo} section.
 *
 * @param createEvent {@code demo.create-event}: create the event "demo" (seats A1-A5, B1-B5) on first
 *                    start; bin/run sets it, and leaving the key out leaves it off
 */
public record DemoConfig(boolean createEvent) {

    static DemoConfig read(Reader keys) {
        return new DemoConfig(keys.flag("demo.create-event", false));
    }
}
