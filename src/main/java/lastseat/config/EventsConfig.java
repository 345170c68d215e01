package lastseat.config;

/**
 * The {@code events} section: how large an event may be and how large a request that creates one.
 *
 * @param maxCapacity  {@code events.max-capacity}: seats one event may have
 * @param maxBodyBytes {@code events.max-body-bytes}: the largest {@code POST /events} body
 */
public record EventsConfig(int maxCapacity, int maxBodyBytes) {

    public EventsConfig {
        Check.between("events.max-capacity", maxCapacity, 1, 100_000);
        Check.between("events.max-body-bytes", maxBodyBytes, 1024, 16 * 1024 * 1024);
    }

    static EventsConfig read(Reader keys) {
        return new EventsConfig(keys.integer("events.max-capacity"), keys.integer("events.max-body-bytes"));
    }
}
