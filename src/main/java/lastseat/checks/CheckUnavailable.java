package lastseat.checks;

import lastseat.web.Problem;

import java.time.Duration;
import java.util.Map;

/** 503: a check service failed, reset the connection or answered nonsense; the hold was released. */
public final class CheckUnavailable extends Problem {
    CheckUnavailable(String service, String what, Duration retryAfter, Throwable cause) {
        super(503, "check-unavailable", "Check unavailable",
              "The " + service + " service could not be used: " + what + "; nothing was charged, try again",
              Map.of("service", service), retryAfter, cause);
    }
}
