package lastseat.outside;

import io.helidon.config.Config;
import lastseat.config.Values;

import java.time.Duration;

/**
 * Limits for every call to the outside world. {@code callTimeout} caps one call even when the
 * purchase deadline would allow more. A call made under a deadline times out at the deadline plus
 * {@code deadlineBackstop}: the scope's deadline, which interrupts the call, decides first, and the
 * call's own timeout only catches a call that would not stop.
 */
public record OutsideConfig(String baseUrl, Duration connectTimeout, Duration callTimeout, Duration deadlineBackstop,
                            int maxResponseBytes) {

    public static OutsideConfig from(Config outside) {
        return new OutsideConfig(
                Values.httpUri(outside, "base-url", "http://127.0.0.1:8089").toString().replaceAll("/+$", ""),
                Values.duration(outside, "connect-timeout", Duration.ofMillis(10), Duration.ofSeconds(30)),
                Values.duration(outside, "call-timeout", Duration.ofMillis(10), Duration.ofSeconds(60)),
                Values.duration(outside, "deadline-backstop", Duration.ZERO, Duration.ofSeconds(10)),
                Values.integer(outside, "max-response-bytes", 256, 10 * 1024 * 1024));
    }
}
