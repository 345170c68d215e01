package lastseat.config;

import java.net.URI;
import java.time.Duration;

/**
 * The rules a configuration value can break, each failing with one sentence that names the key (or,
 * across keys, both keys) and the value found, so an operator can fix the start-up without reading code.
 */
final class Check {
    private Check() {
    }

    static Duration between(String key, Duration value, Duration min, Duration max) {
        if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
            throw outOfRange(key, value, min, max);
        }
        return value;
    }

    /** Zero (the feature off), or between {@code min} and {@code max}. */
    static Duration zeroOrBetween(String key, Duration value, Duration min, Duration max) {
        return value.isZero() ? value : between(key, value, min, max);
    }

    static int between(String key, int value, int min, int max) {
        if (value < min || value > max) {
            throw outOfRange(key, value, min, max);
        }
        return value;
    }

    /** A URL path: starts with '/', no spaces, no query. */
    static String path(String key, String path) {
        if (!path.matches("/[A-Za-z0-9/._~-]*")) {
            throw new IllegalStateException("Configuration " + key + " must be a path starting with '/', got '" + path + "'");
        }
        return path;
    }

    /** An http(s) URL, returned without trailing slashes so that a path can be appended. */
    static String httpUrl(String key, String text) {
        try {
            String scheme = URI.create(text).getScheme();
            if ("http".equals(scheme) || "https".equals(scheme)) {
                return text.replaceAll("/+$", "");
            }
        } catch (IllegalArgumentException e) {
            // Not a URI at all: refused below, like any other scheme.
        }
        throw new IllegalStateException("Configuration " + key + " must be an http(s) URL, got '" + text + "'");
    }

    static void notLonger(String key, Duration value, String boundKey, Duration bound) {
        if (value.compareTo(bound) > 0) {
            throw new IllegalStateException("Configuration " + key + " (" + value + ") must not be longer than "
                                            + boundKey + " (" + bound + ")");
        }
    }

    static void notShorter(String key, Duration value, String boundKey, Duration bound) {
        if (value.compareTo(bound) < 0) {
            throw new IllegalStateException("Configuration " + key + " (" + value + ") must not be shorter than "
                                            + boundKey + " (" + bound + ")");
        }
    }

    /** Two keys that must not hold the same value (the values are not shown: they may be secrets). */
    static void differ(String key, String value, String otherKey, String other) {
        if (value.equals(other)) {
            throw new IllegalStateException("Configuration " + key + " and " + otherKey + " must differ");
        }
    }

    /** Two settings of which at most one may be on, for {@code why}. */
    static void notBoth(String key, boolean on, String otherKey, boolean otherOn, String why) {
        if (on && otherOn) {
            throw new IllegalStateException("Configuration " + key + " and " + otherKey + " must not both be set: " + why);
        }
    }

    private static IllegalStateException outOfRange(String key, Object value, Object min, Object max) {
        return new IllegalStateException("Configuration " + key + " must be between " + min + " and " + max + ", got " + value);
    }
}
