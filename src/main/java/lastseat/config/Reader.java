package lastseat.config;

import io.helidon.config.Config;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Set;

/**
 * Reads lastseat's keys out of a Helidon {@link Config}, each by its full name, and turns their text
 * into values. A missing key or a value that is not a number, a duration or a flag stops start-up with
 * one sentence naming the key; whether the value is in range is the section's business, not the reader's.
 * Durations are written {@code 800ms}, {@code 2s}, {@code 5m}, {@code 1h}, {@code 7d} or ISO-8601 ({@code PT0.8S}).
 * Every key is required: its default is written once, in {@code application.yaml}, and a reader with
 * a fallback of its own would be a second default that can drift from the documented one.
 *
 * <p>Hazard: a key read in two places can be read two ways (two ranges, two defaults) and drift apart,
 * so every key has one reader in one section; a second read of a key is refused as the bug it is.
 */
final class Reader {
    private final Config root;
    private final Set<String> read = new LinkedHashSet<>();

    Reader(Config root) {
        this.root = root;
    }

    Duration duration(String key) {
        String text = required(key).trim();
        String lower = text.toLowerCase(Locale.ROOT);
        try {
            if (lower.startsWith("p")) {
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
                case 'd' -> Duration.ofDays(amount);
                default -> throw new IllegalArgumentException();
            };
        } catch (RuntimeException e) {
            throw new IllegalStateException("Configuration " + key + " must be a duration such as 800ms, 2s, 7d or PT0.8S, got '" + text + "'");
        }
    }

    int integer(String key) {
        String text = required(key).trim();
        try {
            return Integer.parseInt(text);
        } catch (NumberFormatException e) {
            throw new IllegalStateException("Configuration " + key + " must be a whole number, got '" + text + "'");
        }
    }

    String string(String key) {
        return required(key);
    }

    boolean flag(String key) {
        String text = required(key).trim();
        return switch (text.toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalStateException("Configuration " + key + " must be true or false, got '" + text + "'");
        };
    }

    /** Every key read so far, in the order read. */
    Set<String> keysRead() {
        return Collections.unmodifiableSet(read);
    }

    private String required(String key) {
        return config(key).asString().orElseThrow(() -> new IllegalStateException("Configuration " + key + " is missing"));
    }

    private Config config(String key) {
        if (!read.add(key)) {
            throw new IllegalStateException("Configuration " + key + " is read twice; every key has one reader, in its section");
        }
        return root.get(key);
    }
}
