package lastseat.testkit;

import com.github.tomakehurst.wiremock.WireMockServer;

import java.nio.file.Files;
import java.nio.file.Path;

import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.wireMockConfig;

/**
 * WireMock as the tests and tools run it in their own JVM: the mappings and files of the project's
 * {@code wiremock/} directory on a free port, with the truthful provider ({@link Ledger}), the
 * in-flight meter and their admin API. {@code bin/run} starts the same stubs as a process of their
 * own, from the same directory and this module's jar.
 */
public final class StubServer {
    private StubServer() {
    }

    /** Not started; the caller starts and stops it. */
    public static WireMockServer create() {
        return new WireMockServer(wireMockConfig()
                .dynamicPort()
                .bindAddress("127.0.0.1")
                .usingFilesUnderDirectory(stubsDirectory().toString())
                .containerThreads(200)
                .jettyAcceptQueueSize(1000)
                .extensions(new Ledger(), new InFlight(), new LedgerAdmin()));
    }

    /**
     * The project's {@code wiremock/} directory: from the working directory (the project's top, as
     * Maven runs the tests and the scripts run the tools), or the nearest parent that has one.
     */
    static Path stubsDirectory() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isDirectory(dir.resolve("wiremock/mappings"))) {
                return dir.resolve("wiremock");
            }
        }
        throw new IllegalStateException("no wiremock/ directory with mappings above " + Path.of("").toAbsolutePath());
    }
}
