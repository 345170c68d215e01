package lastseat.payment;

import lastseat.web.Problem;

import java.time.Duration;
import java.util.Map;

/** 503 or 502: the payment could not be attempted, or the provider refused the request; nothing was charged. */
public final class PaymentUnavailable extends Problem {
    public PaymentUnavailable(int status, String kind, String detail, Duration retryAfter) {
        super(status, kind, status == 503 ? "Payment capacity full" : "Payment refused",
              detail + "; the seats were released and nothing was charged", Map.of(), retryAfter, null);
    }
}
