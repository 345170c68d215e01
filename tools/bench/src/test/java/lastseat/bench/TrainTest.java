package lastseat.bench;

import com.github.tomakehurst.wiremock.WireMockServer;
import lastseat.testkit.LastseatClient;
import lastseat.testkit.ServerProcess;
import lastseat.testkit.StubServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * bin/train: JDK 25's AOT cache for one build. The training writes a cache that a server then starts with under
 * {@code -XX:AOTMode=on}, which refuses to start when the JVM cannot use the cache, and sells. bin/lib.sh names a
 * cache for the bytes of every jar: the JVM checks a cache against the classpath's names, so a jar rebuilt in
 * place (same name, size and time) must not find the cache of the build before.
 */
class TrainTest {

    @Test
    void theTrainingWritesACacheThatAServerStartsWithAndSellsFrom(@TempDir Path dir) throws Exception {
        Path cache = dir.resolve("train.aot");
        // As bin/train: the servers run from the service's jars (built before this module), for the JVM caches
        // classes from jars only, not from the test run's class directories.
        System.setProperty("lastseat.classpath", "target/lastseat.jar:target/libs/*");
        System.setProperty(OnSale.AOT_OUTPUT, cache.toString());
        WireMockServer stubs = StubServer.create();
        try {
            Bench.run(true, List.of("train"));
            System.clearProperty(OnSale.AOT_OUTPUT);

            assertThat(cache).as("the cache the training server wrote as it exited").isRegularFile();
            assertThat(Files.size(cache)).as("bytes: classes and profiles, not an empty file").isGreaterThan(10_000_000L);
            stubs.start();
            // Not warmed up, so its purchase gets a deadline a cold JIT on a busy machine cannot miss: the test is about the cache.
            try (ServerProcess server = ServerProcess.start(dir.resolve("served"), URI.create("http://127.0.0.1:" + stubs.port()),
                                                            Map.of("warm-up.purchases", "0", "purchase.deadline", "5s"),
                                                            List.of("-XX:AOTMode=on", "-XX:AOTCache=" + cache));
                 LastseatClient client = new LastseatClient(server.instance())) {
                LastseatClient.OneSeat sale = client.buyOneSeat("ada");

                assertThat(sale.answer().status()).as(sale.answer().toString()).isEqualTo(201);
                assertThat(sale.violations()).as("I1, I2, I4").isEmpty();
                assertThat(sale.freePermits()).as("payment permits back").isEqualTo(20);
            }
        } finally {
            System.clearProperty(OnSale.AOT_OUTPUT);
            System.clearProperty("lastseat.classpath");
            if (stubs.isRunning()) {
                stubs.stop();
            }
        }
    }

    @Test
    void aCacheIsNamedForEveryJarsBytesSoAJarRebuiltInPlaceFindsNoOlderCache(@TempDir Path build) throws Exception {
        Path libs = Files.createDirectories(build.resolve("libs"));
        Files.writeString(build.resolve("lastseat.jar"), "the service");
        Path a = Files.writeString(libs.resolve("a.jar"), "library a, build 1");
        Files.writeString(libs.resolve("b.jar"), "library b, build 1");

        String first = cacheFile(build);
        String again = cacheFile(build);
        FileTime time = Files.getLastModifiedTime(a);
        Files.writeString(a, "library a, build 2");
        Files.setLastModifiedTime(a, time);
        String rebuilt = cacheFile(build);
        Files.move(libs.resolve("b.jar"), libs.resolve("c.jar"));
        String renamed = cacheFile(build);

        assertThat(first).matches(Pattern.quote(build + "/aot/lastseat-") + "[0-9a-f]{16}\\.aot").isEqualTo(again);
        assertThat(rebuilt).as("one jar's bytes changed, its name, size and time kept").isNotEqualTo(first);
        assertThat(renamed).as("a jar renamed").isNotEqualTo(rebuilt).isNotEqualTo(first);
    }

    @Test
    void theScriptsStartWithTheBuildsCacheOnlyWhenThereIsOneAndItIsNotSwitchedOff(@TempDir Path build) throws Exception {
        Files.createDirectories(build.resolve("libs"));
        Files.writeString(build.resolve("lastseat.jar"), "the service");

        String none = options(build, "on");
        Path cache = Path.of(cacheFile(build));
        Files.createDirectories(cache.getParent());
        Files.writeString(cache, "a cache");
        String with = options(build, "on");
        String off = options(build, "off");

        assertThat(none).as("no cache made yet").startsWith("[] ").contains("none for this build");
        assertThat(with).as("this build's cache").startsWith("[-XX:AOTCache=" + cache + "] ");
        assertThat(off).as("LASTSEAT_AOT=off").startsWith("[] ").contains("off");
    }

    /** bin/lib.sh's {@code aot_cache_file} for the build in {@code build}, as bin/run and bin/train call it. */
    private static String cacheFile(Path build) throws IOException, InterruptedException {
        return bash("aot_cache_file \"$0\"", build, "on");
    }

    /** bin/lib.sh's {@code aot_options} for the build in {@code build}: "[the JVM options] the line the scripts print". */
    private static String options(Path build, String aot) throws IOException, InterruptedException {
        return bash("aot_options \"$0\" && echo \"[${AOT_OPTS[*]+${AOT_OPTS[*]}}] $AOT_NOTE\"", build, aot);
    }

    private static String bash(String command, Path build, String aot) throws IOException, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder("bash", "-c", "source bin/jdk.sh && source bin/lib.sh && " + command, build.toString())
                .redirectErrorStream(true);
        builder.environment().put("LASTSEAT_AOT", aot);
        builder.environment().remove("LASTSEAT_JAVA_OPTS");
        Process bash = builder.start();
        String out = new String(bash.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertThat(bash.waitFor()).as(out).isZero();
        return out;
    }
}
