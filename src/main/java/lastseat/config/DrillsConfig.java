package lastseat.config;

/**
 * The {@code drills} section: the server-side drill endpoint ({@code GET /drills/invariants}).
 *
 * <p>Hazard: it reads a whole event at once, so it exists only when {@code drills.enabled} is set;
 * application.yaml ships it false.
 *
 * @param enabled {@code drills.enabled}
 */
public record DrillsConfig(boolean enabled) {

    static DrillsConfig read(Reader keys) {
        return new DrillsConfig(keys.flag("drills.enabled"));
    }
}
