package lastseat.drills;

import com.github.tomakehurst.wiremock.WireMockServer;
import lastseat.testkit.Answer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.ServerProcess;
import lastseat.testkit.StubServer;
import lastseat.testkit.TempDirs;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code ServerProcess} starts a lastseat again, on new ports, when the process finds its port taken (a port
 * found free is bound only seconds later, after the warm-up), and gives up after its third try. The port is
 * held taken here for every try, so each fails the way the flake did, and the bound shows.
 */
class ServerProcessPortTest {

    @Test
    void aProcessThatFindsItsPortTakenIsStartedThreeTimesAndThenTheFailureIsThrownAndTheDatabaseIsLeftUsable() throws Exception {
        WireMockServer stubs = StubServer.create();
        Path dir = Files.createTempDirectory("lastseat-port-taken");
        // The stubs and the directory are given back however the test ends, a failed assertion included.
        try {
            stubs.start();
            URI stubsUri = URI.create("http://127.0.0.1:" + stubs.port());
            try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
                // server.port given as a setting comes after the port ServerProcess chose, so every try meets the taken one.
                assertThatThrownBy(() -> ServerProcess.start(dir, stubsUri, Map.of("server.port", Integer.toString(taken.getLocalPort()),
                                                                                    "warm-up.purchases", "0")))
                        .hasMessageContaining("could not bind its port").hasMessageContaining("BindException");
                try (Stream<Path> files = Files.list(dir)) {
                    assertThat(files.map(file -> file.getFileName().toString()).filter(name -> name.matches("lastseat-\\d+\\.log")))
                            .as("one process log per try, each on the port it was given").hasSize(3);
                }
            }
            // The processes that failed are gone: the same directory's database opens and sells. Not warmed up, so
            // its first purchase gets a deadline a cold JIT on a busy machine cannot miss: the test is about the port.
            try (ServerProcess server = ServerProcess.start(dir, stubsUri, Map.of("warm-up.purchases", "0", "purchase.deadline", "5s"));
                 LastseatClient client = new LastseatClient(server.instance())) {
                Answer bought = client.purchaseQuantity(UUID.randomUUID().toString(), client.newEvent(1), 1, "ada");
                assertThat(bought.status()).as(bought.toString()).isEqualTo(201);
                assertThat(client.freePaymentPermits()).as("payment permits back").isEqualTo(20);
            }
        } finally {
            stubs.stop();
            TempDirs.deleteQuietly(dir);
        }
    }
}
