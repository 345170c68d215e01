package lastseat.config;

import java.time.Duration;

/**
 * The {@code outside} section: limits for every call to the outside world. {@code callTimeout} caps
 * one call even when the purchase deadline would allow more. A call made under a deadline times out
 * at the deadline plus {@code deadlineBackstop}: the scope's deadline, which interrupts the call,
 * decides first, and the call's own timeout only catches a call that would not stop.
 *
 * @param baseUrl          {@code outside.base-url}: where fraud, tax, payment and email answer (kept without
 *                         a trailing slash)
 * @param connectTimeout   {@code outside.connect-timeout}
 * @param callTimeout      {@code outside.call-timeout}
 * @param deadlineBackstop {@code outside.deadline-backstop}
 * @param maxResponseBytes {@code outside.max-response-bytes}: the largest answer body read from an outside service
 * @param idleTimeout      {@code outside.idle-timeout}: how long a connection to the outside services may stay
 *                         idle before lastseat gives it up; it is also the socket's read timeout, so it must outlast
 *                         every call's bound ({@code call-timeout} plus {@code deadline-backstop}) by a second or
 *                         more, and the bound, not the socket, ends a slow call
 * @param maxIdleConnections {@code outside.max-idle-connections}: how many idle connections to the outside services
 *                         are kept for reuse; one more is closed when its call ends. Each kept connection is watched
 *                         by Helidon, which wakes every 101 ms to see whether the other side closed it, for up
 *                         to {@code idle-timeout}: Helidon's own default of 256 left hundreds of them waking after
 *                         a burst
 */
public record OutsideConfig(String baseUrl, Duration connectTimeout, Duration callTimeout, Duration deadlineBackstop,
                            int maxResponseBytes, Duration idleTimeout, int maxIdleConnections) {

    public OutsideConfig {
        baseUrl = Check.httpUrl("outside.base-url", baseUrl);
        Check.between("outside.call-timeout", callTimeout, Duration.ofMillis(20), Duration.ofSeconds(60));
        // Below the call's cap: a connect that outlasts the call is cut by the call's bound and can no longer
        // be told "not sent".
        Duration longestConnect = callTimeout.minusMillis(1).compareTo(Duration.ofSeconds(30)) < 0
                ? callTimeout.minusMillis(1) : Duration.ofSeconds(30);
        Check.between("outside.connect-timeout", connectTimeout, Duration.ofMillis(10), longestConnect);
        Check.between("outside.deadline-backstop", deadlineBackstop, Duration.ZERO, Duration.ofSeconds(10));
        Check.between("outside.max-response-bytes", maxResponseBytes, 256, 10 * 1024 * 1024);
        Check.between("outside.idle-timeout", idleTimeout, callTimeout.plus(deadlineBackstop).plusSeconds(1), Duration.ofHours(24));
        Check.between("outside.max-idle-connections", maxIdleConnections, 1, 1024);
    }

    static OutsideConfig read(Reader keys) {
        return new OutsideConfig(
                keys.string("outside.base-url"),
                keys.duration("outside.connect-timeout"),
                keys.duration("outside.call-timeout"),
                keys.duration("outside.deadline-backstop"),
                keys.integer("outside.max-response-bytes"),
                keys.duration("outside.idle-timeout"),
                keys.integer("outside.max-idle-connections"));
    }
}
