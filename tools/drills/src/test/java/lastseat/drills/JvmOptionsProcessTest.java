package lastseat.drills;

import com.github.tomakehurst.wiremock.WireMockServer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.ServerProcess;
import lastseat.testkit.StubServer;
import lastseat.testkit.TempDirs;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The servers the drills, benchmarks and tests start run with {@code src/main/resources/jvm.options}, as
 * bin/run's does: the process's own check of its JVM ({@code lastseat.JvmOptions}) says so at start-up.
 * What it says when they are missing is {@code JvmOptionsTest}'s, on a JVM started without them.
 */
class JvmOptionsProcessTest {

    @Test
    void aServerStartedLikeBinRunsSaysItRunsWithItsJvmOptionsAndSells() throws Exception {
        WireMockServer stubs = StubServer.create();
        Path dir = Files.createTempDirectory("lastseat-jvm-options");
        // The stubs and the directory are given back however the test ends, a failed start included.
        try {
            stubs.start();
            // Not warmed up, so its purchase gets a deadline a cold JIT on a busy machine cannot miss: the test is about the options.
            try (ServerProcess server = ServerProcess.start(dir, URI.create("http://127.0.0.1:" + stubs.port()),
                                                            Map.of("warm-up.purchases", "0", "purchase.deadline", "5s"));
                 LastseatClient client = new LastseatClient(server.instance())) {
                LastseatClient.OneSeat sale = client.buyOneSeat("ada");
                String log = Files.readString(server.log());

                assertThat(log).as("the process's log").contains("JVM options as measured: -XX:MaxInlineLevel=6 -XX:InlineSmallCode=1000 -XX:FreqInlineSize=100")
                               .doesNotContain("started without the JVM options");
                assertThat(sale.answer().status()).as(sale.answer().toString()).isEqualTo(201);
                assertThat(sale.violations()).as("I1, I2, I4").isEmpty();
                assertThat(sale.freePermits()).as("payment permits back").isEqualTo(20);
            }
        } finally {
            stubs.stop();
            TempDirs.deleteQuietly(dir);
        }
    }
}
