package lastseat.purchase;

import lastseat.outside.Outside;
import lastseat.work.Latency;
import lastseat.payment.Charge;
import lastseat.payment.PaymentGateway;
import lastseat.payment.PaymentOrder;
import lastseat.support.InProcess;
import lastseat.work.Deadline;
import lastseat.work.Timeline;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.math.BigDecimal;
import java.net.ConnectException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fast tier: what a payment makes of a connect that timed out, and what a lookup that got no answer says. {@code OutsideHttp} throws
 * {@link HttpConnectTimeoutException} only for a timeout thrown while the connection was being opened,
 * which Helidon finishes before it writes any of the request, so no byte of the request left, as a
 * refused connection: alone it is "not sent", and after an
 * attempt that may have reached the provider it must not clear "unknown". FaultProxyTest shows the
 * same over a real socket: nothing reaches the provider while connects time out.
 */
@Tag("fast")
class ConnectTimeoutTest {
    private final InProcess app = InProcess.start(Map.of("payment.max-attempts", "2"));
    private final Deque<IOException> failures = new ArrayDeque<>();
    private final PaymentGateway payments = new PaymentGateway(new Failing(), app.config.payment(), Latency.of(app.config.admission().callTime()));

    @AfterEach
    void close() {
        app.close();
    }

    @Test
    void aPaymentWhoseConnectTimedOutWasNotSentAndCanBeAnsweredNothingWasCharged() throws Exception {
        failures.add(new HttpConnectTimeoutException("HTTP connect timed out"));

        Charge charge = charge();

        assertThat(charge).isInstanceOfSatisfying(Charge.NotSent.class, notSent -> assertThat(notSent.why())
                .isEqualTo(Charge.NotSent.Why.UNREACHABLE));
        assertThat(failures).as("not asked again: nothing left, and the provider is not reachable").isEmpty();
        assertThat(payments.availablePermits()).as("permit back").isEqualTo(app.config.payment().permits());
    }

    @Test
    void aConnectThatTimesOutAfterAResetLeavesThePaymentUnknown() throws Exception {
        failures.addAll(List.of(new IOException("connection reset"), new HttpConnectTimeoutException("HTTP connect timed out")));

        Charge charge = charge();

        assertThat(charge).as("the reset request may have been captured").isInstanceOf(Charge.Unknown.class);
        assertThat(failures).as("both attempts made").isEmpty();
        assertThat(payments.availablePermits()).as("permit back").isEqualTo(app.config.payment().permits());
    }

    @Test
    void aRefusedConnectionIsNotSentTooTheSameAnswerAsATimedOutConnect() throws Exception {
        failures.add(new ConnectException("Connection refused"));

        assertThat(charge()).isInstanceOf(Charge.NotSent.class);
    }

    @Test
    void aLookupWithoutAnAnswerSaysWhatFailedTheConnectTheWaitOrTheExchange() throws Exception {
        Map<IOException, String> said = new LinkedHashMap<>();
        said.put(new HttpConnectTimeoutException("HTTP connect timed out"), "could not connect to the provider");
        said.put(new ConnectException("Connection refused"), "could not connect to the provider");
        said.put(new HttpTimeoutException("request timed out"), "no answer from the provider in time");
        said.put(new IOException("connection reset"), "the connection broke before the provider answered");
        for (Map.Entry<IOException, String> failure : said.entrySet()) {
            failures.add(failure.getKey());

            PaymentGateway.Lookup lookup = payments.lookup("p-1", Duration.ofSeconds(2));

            assertThat(lookup).as(failure.getKey().toString()).isEqualTo(new PaymentGateway.Lookup.Unclear(failure.getValue()));
        }
        assertThat(failures).as("one question each").isEmpty();
        assertThat(payments.availablePermits()).as("a lookup takes no permit").isEqualTo(app.config.payment().permits());
    }

    private Charge charge() throws InterruptedException {
        return payments.charge(new PaymentOrder("p-1", new BigDecimal("10.00"), "EUR", "tok_ok"),
                               Deadline.after(Duration.ofSeconds(2), System.nanoTime()), new Timeline(app.clock));
    }

    /** Fails each request with the next scripted failure; none is left for a request the test did not expect. */
    private final class Failing implements Outside {
        @Override
        public Answer post(String path, String json, Map<String, String> headers, Deadline deadline) throws IOException {
            IOException next = failures.poll();
            if (next == null) {
                throw new AssertionError("an unexpected request: " + path);
            }
            throw next;
        }

        @Override
        public Answer post(String path, String json, Map<String, String> headers, Duration timeout) throws IOException {
            return post(path, json, headers, (Deadline) null);
        }

        @Override
        public Answer get(String pathAndQuery, Duration timeout) throws IOException {
            return post(pathAndQuery, "", Map.of(), (Deadline) null);
        }
    }
}
