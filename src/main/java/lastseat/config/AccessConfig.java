package lastseat.config;

import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The {@code access} section: who may call what (docs/SECURITY.md).
 *
 * <p>Hazard: the operator routes (the outbox, the drills, the keys, the metrics) are served only on the
 * admin port, bound to 127.0.0.1 unless {@code access.admin-host} says otherwise; binding it wider puts
 * them one stolen key away from the internet.
 *
 * @param adminPort     {@code access.admin-port}: the admin socket's port (0 picks a free one)
 * @param adminHost     {@code access.admin-host}: the address the admin socket binds to
 * @param operatorKey   {@code access.operator-key}: installed at start as the key named "operator"
 *                      (empty: none is installed; keys made before stay)
 */
public record AccessConfig(int adminPort, String adminHost, Optional<String> operatorKey) {
    /** What a key looks like: "ls_", 16 hex digits of id, "_", 32 hex digits (128 bits) of secret. */
    public static final Pattern KEY = Pattern.compile("ls_[0-9a-f]{16}_[0-9a-f]{32}");

    public AccessConfig {
        Check.between("access.admin-port", adminPort, 0, 65_535);
        if (adminHost.isBlank()) {
            throw new IllegalStateException("Configuration access.admin-host must be an address such as 127.0.0.1, got ''");
        }
        operatorKey.ifPresent(key -> key("access.operator-key", key));
    }

    static AccessConfig read(Reader keys) {
        String operator = keys.string("access.operator-key").trim();
        return new AccessConfig(keys.integer("access.admin-port"), keys.string("access.admin-host").trim(),
                                operator.isEmpty() ? Optional.empty() : Optional.of(operator));
    }

    /** A key as configuration may give one: in the format keys are made in. */
    static String key(String name, String key) {
        if (!KEY.matcher(key).matches()) {
            throw new IllegalStateException("Configuration " + name + " must be a key such as ls_<16 hex digits>_<32 hex digits> "
                                            + "(make one: echo \"ls_$(openssl rand -hex 8)_$(openssl rand -hex 16)\")");
        }
        return key;
    }
}
