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
