package lastseat.config;

import io.helidon.config.Config;

import java.net.URI;
import java.time.Duration;
import java.util.Locale;
import java.util.function.Predicate;

/**
 * Reads one configuration value and refuses start-up when it is missing or out of range.
 * Durations are written as {@code 800ms}, {@code 2s}, {@code 5m} or ISO-8601 ({@code PT0.8S}).
 */
public final class Values {
    private Values() {
    }

    public static Duration duration(Config config, String key, Duration min, Duration max) {
        String text = config.get(key).asString().orElseThrow(() -> missing(config, key));
        Duration value = parseDuration(text.trim(), config.key() + "." + key);
        return inRange(config, key, value, v -> v.compareTo(min) >= 0 && v.compareTo(max) <= 0,
                       "between " + min + " and " + max);
    }

    public static int integer(Config config, String key, int min, int max) {
        int value = config.get(key).asInt().orElseThrow(() -> missing(config, key));
        return inRange(config, key, value, v -> v >= min && v <= max, "between " + min + " and " + max);
    }

    public static String string(Config config, String key) {
        return config.get(key).asString().orElseThrow(() -> missing(config, key));
    }

    public static String string(Config config, String key, String fallback) {
        return config.get(key).asString().orElse(fallback);
    }

    /** A URL path: starts with '/', no spaces, no query. */
    public static String path(Config config, String key, String fallback) {
        String path = config.get(key).asString().orElse(fallback);
        if (!path.matches("/[A-Za-z0-9/._~-]*")) {
            throw new IllegalStateException("Configuration " + name(config, key) + " must be a path starting with '/', got '" + path + "'");
        }
        return path;
    }

    public static URI httpUri(Config config, String key, String fallback) {
        String text = config.get(key).asString().orElse(fallback);
        try {
            URI uri = URI.create(text);
            if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme())) {
                throw new IllegalArgumentException("not http(s)");
            }
            return uri;
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("Configuration " + name(config, key) + " must be an http(s) URL, got '" + text + "'");
        }
    }

    static Duration parseDuration(String text, String name) {
        String lower = text.toLowerCase(Locale.ROOT);
        try {
            if (lower.startsWith("pt") || lower.startsWith("p")) {
                return Duration.parse(text);
            }
            if (lower.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(lower.substring(0, lower.length() - 2).trim()));
            }
            long amount = Long.parseLong(lower.substring(0, lower.length() - 1).trim());
            return switch (lower.charAt(lower.length() - 1)) {
                case 's' -> Duration.ofSeconds(amount);
                case 'm' -> Duration.ofMinutes(amount);
                case 'h' -> Duration.ofHours(amount);
                default -> throw new IllegalArgumentException();
            };
        } catch (RuntimeException e) {
            throw new IllegalStateException("Configuration " + name + " must be a duration such as 800ms, 2s or PT0.8S, got '" + text + "'");
        }
    }

    private static <T> T inRange(Config config, String key, T value, Predicate<T> ok, String range) {
        if (!ok.test(value)) {
            throw new IllegalStateException("Configuration " + name(config, key) + " must be " + range + ", got " + value);
        }
        return value;
    }

    private static IllegalStateException missing(Config config, String key) {
        return new IllegalStateException("Configuration " + name(config, key) + " is missing");
    }

    private static String name(Config config, String key) {
        return config.key().toString().isEmpty() ? key : config.key() + "." + key;
    }
}
