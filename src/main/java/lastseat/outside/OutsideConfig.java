package lastseat.outside;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/**
 * Limits for every call to the outside world. {@code callTimeout} caps one call even when the
 * purchase deadline would allow more; the remaining deadline caps it further.
 */
public record OutsideConfig(String baseUrl, Duration connectTimeout, Duration callTimeout, int maxResponseBytes) {

    public static OutsideConfig from(Config outside) {
        return new OutsideConfig(
                Values.httpUri(outside, "base-url", "http://127.0.0.1:8089").toString().replaceAll("/+$", ""),
                Values.duration(outside, "connect-timeout", Duration.ofMillis(10), Duration.ofSeconds(30)),
                Values.duration(outside, "call-timeout", Duration.ofMillis(10), Duration.ofSeconds(60)),
                Values.integer(outside, "max-response-bytes", 256, 10 * 1024 * 1024));
    }
}
