package lastseat.drills;

import lastseat.testkit.StubServer;
import com.github.tomakehurst.wiremock.WireMockServer;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The money audit as {@code bin/test} runs it: a fixed seed and 50 buyers, against WireMock in this
 * JVM (with the ledger) and a lastseat process the campaign starts, kills and restarts itself; both
 * phases of its verdict (at the stated bound with faults on, then after the provider recovered).
 * About half a minute. A failure prints the campaign's report: the seed, each check, and for each
 * breach the history that shows it; {@code bin/drill money-audit --seed <seed> --purchases 50}
 * replays the same plan against a separate WireMock.
 */
class MoneyAuditTest {
    private static final long SEED = 20_260_601L;
    private static final int PURCHASES = 50;

    @Test
    void aSeededCampaignOfCompoundFaultsLeavesEveryCaptureConfirmedOrRefundedOnce() {
        WireMockServer stubs = StubServer.create();
        stubs.start();
        try {
            // The campaign starts a lastseat of its own; the target's service is never called.
            Target target = new Target(lastseat.testkit.Instance.local(9, 9), URI.create("http://127.0.0.1:" + stubs.port()));
            Findings.Report report = Drills.run(MoneyAudit.drill(), target, Settings.defaults().withMoneyAudit(SEED, PURCHASES));
            String lines = String.join("\n", report.lines()) + "\n" + report.json();

            assertThat(report.ok()).as(lines).isTrue();
            assertThat(report.json()).as(lines).startsWith("{\"drill\":\"money-audit\",\"ok\":true,\"seed\":" + SEED
                                                           + ",\"purchases\":" + PURCHASES + ",\"faults\":");
            assertThat((Integer) report.figures().get("kills")).as("kills").isGreaterThanOrEqualTo(1);
            assertThat((Integer) report.figures().get("faults")).as("faults injected").isPositive();
            assertThat((Integer) report.figures().get("captures")).as("captures: the buyers got through to the provider").isPositive();
        } finally {
            stubs.stop();
        }
    }

    @Test
    void theFaultProxyRefusesNewConnectionsWhileDownResetsTheOpenOnesAndListensAgainOnItsPort() throws IOException {
        try (ServerSocket upstream = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             FaultProxy proxy = FaultProxy.start(URI.create("http://127.0.0.1:" + upstream.getLocalPort()), 8)) {
            upstream.setSoTimeout(2000);
            int port = proxy.url().getPort();
            Socket open = new Socket("127.0.0.1", port);
            open.setSoTimeout(2000);
            try (Socket far = upstream.accept()) {
                open.getOutputStream().write("ping".getBytes());
                assertThat(new String(far.getInputStream().readNBytes(4))).as("bytes pass through").isEqualTo("ping");

                assertThat(proxy.down("a test")).isTrue();

                assertThatThrownBy(() -> new Socket("127.0.0.1", port).close()).as("a new connection is refused")
                        .isInstanceOf(ConnectException.class);
                assertThatThrownBy(() -> open.getInputStream().read()).as("the open connection is reset")
                        .isInstanceOf(SocketException.class);
            } finally {
                open.close();
            }

            proxy.up();

            try (Socket again = new Socket("127.0.0.1", port); Socket far = upstream.accept()) {
                again.getOutputStream().write("pong".getBytes());
                assertThat(new String(far.getInputStream().readNBytes(4))).as("the same port answers again").isEqualTo("pong");
            }
            assertThat(proxy.windows()).singleElement().satisfies(w -> assertThat(w.why()).isEqualTo("a test"));
        }
    }
}
