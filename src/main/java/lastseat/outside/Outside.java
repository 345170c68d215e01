package lastseat.outside;

import lastseat.work.Deadline;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;

/**
 * The calls lastseat makes to the fraud, tax, payment and email services, by path: what the checks,
 * the payment gateway and the outbox need, and all a fake of the outside world has to answer.
 *
 * <p>Contract: every call ends within its deadline or timeout (plus a small backstop) and, when its
 * thread is interrupted, stops instead of waiting for the answer. An {@link IOException} means no
 * answer came, which says nothing about whether the request arrived, except in two words of
 * {@code java.net.http} that the payment decides on: {@link java.net.ConnectException} and
 * {@link java.net.http.HttpConnectTimeoutException} mean no connection was made, so nothing was sent;
 * {@link java.net.http.HttpTimeoutException} means the call's time ran out.
 */
public interface Outside {

    /**
     * What a call's {@link IOException} says, in the words above: the one place that reads them. Only the first
     * two say that nothing was sent.
     */
    enum Failure {
        /** No connection within the connect timeout: nothing was sent. */
        NO_CONNECTION_IN_TIME,
        /** The connection was refused: nothing was sent. */
        CONNECTION_REFUSED,
        /** The call's time ran out; the request may have arrived. */
        NO_ANSWER_IN_TIME,
        /** The exchange broke (a reset, a cut answer); the request may have arrived. */
        BROKEN;

        public static Failure of(IOException failure) {
            // HttpConnectTimeoutException is an HttpTimeoutException: the connect is asked first.
            return switch (failure) {
                case java.net.http.HttpConnectTimeoutException timeout -> NO_CONNECTION_IN_TIME;
                case java.net.ConnectException refused -> CONNECTION_REFUSED;
                case java.net.http.HttpTimeoutException timeout -> NO_ANSWER_IN_TIME;
                default -> BROKEN;
            };
        }
    }

    /** An answer: its status and its body (at most the configured size). */
    record Answer(int status, String body) {
    }

    /** POSTs JSON to {@code path} within the remaining {@code deadline}. */
    Answer post(String path, String json, Map<String, String> headers, Deadline deadline) throws IOException, InterruptedException;

    /** POSTs JSON to {@code path}, waiting at most {@code timeout}. */
    Answer post(String path, String json, Map<String, String> headers, Duration timeout) throws IOException, InterruptedException;

    /** GETs JSON from {@code pathAndQuery}, waiting at most {@code timeout}. */
    Answer get(String pathAndQuery, Duration timeout) throws IOException, InterruptedException;
}
