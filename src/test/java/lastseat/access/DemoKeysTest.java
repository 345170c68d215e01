package lastseat.access;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import lastseat.Services;
import lastseat.testkit.Instance;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo's keys are printed in the README: a database once run with them (bin/run) must not keep them
 * working once a start is made without the demo, and a demo key revoked stays revoked when the demo
 * starts again.
 */
class DemoKeysTest {

    @Test
    void aStartWithoutTheDemoRevokesTheDemosPublishedKeysAndADemoStartDoesNotBringARevokedOneBack(@TempDir Path dir) throws Exception {
        Map<String, String> demo = Map.of("db.url", "jdbc:h2:file:" + dir.resolve("db"), "demo.create-keys", "true");
        Map<String, String> production = Map.of("db.url", "jdbc:h2:file:" + dir.resolve("db"), "demo.create-keys", "false",
                                                "access.operator-key", "ls_1234567890abcdef_0123456789abcdef0123456789abcdef");

        boolean demoWorked = start(demo, keys -> keys.caller(Instance.DEMO_CLIENT_KEY, soon()).isPresent()
                                                 && keys.caller(Instance.DEMO_OPERATOR_KEY, soon()).isPresent());
        boolean demoAfterProduction = start(production, keys -> keys.caller(Instance.DEMO_CLIENT_KEY, soon()).isPresent()
                                                                || keys.caller(Instance.DEMO_OPERATOR_KEY, soon()).isPresent());
        boolean ownOperatorWorks = start(production, keys -> keys.caller("ls_1234567890abcdef_0123456789abcdef0123456789abcdef", soon())
                .map(Caller::operator).orElse(false));
        boolean demoClientBack = start(demo, keys -> keys.caller(Instance.DEMO_CLIENT_KEY, soon()).isPresent());

        assertThat(demoWorked).isTrue();
        assertThat(demoAfterProduction).as("the published keys, after a start without the demo").isFalse();
        assertThat(ownOperatorWorks).isTrue();
        assertThat(demoClientBack).as("a revoked key stays revoked").isFalse();
    }

    /**
     * bin/run shows the demo's keys as the server states them at start, read from its log by bin/lib.sh's
     * {@code demo_keys}: the line this server writes, given to that very function, yields the keys it
     * installed, and a start without the demo states none.
     */
    @Test
    void aDemoStartStatesTheKeysItInstalledInTheLineBinRunReads(@TempDir Path dir) throws Exception {
        Map<String, String> demo = Map.of("db.url", "jdbc:h2:file:" + dir.resolve("db"), "demo.create-keys", "true");
        Map<String, String> production = Map.of("db.url", "jdbc:h2:file:" + dir.resolve("db2"), "demo.create-keys", "false");

        List<String> demoLines = logged(demo);
        List<String> productionLines = logged(production);

        assertThat(demoLines).hasSize(1);
        Path log = dir.resolve("lastseat.log");
        Files.writeString(log, "2026.01.01 00:00:00.000 INFO lastseat.Services installKeys: " + demoLines.getFirst() + "\n");
        Process bash = new ProcessBuilder("bash", "-c", "source bin/lib.sh && demo_keys \"$0\" && echo \"$OPERATOR_KEY $CLIENT_KEY\"",
                                          log.toString()).redirectErrorStream(true).start();
        String read = new String(bash.getInputStream().readAllBytes()).trim();
        assertThat(bash.waitFor()).as(read).isZero();
        assertThat(read).isEqualTo(Instance.DEMO_OPERATOR_KEY + " " + Instance.DEMO_CLIENT_KEY);
        assertThat(productionLines).as("no demo, no keys stated").isEmpty();
    }

    /** What {@link Services#installKeys} logs that states the demo's keys. */
    private static List<String> logged(Map<String, String> settings) {
        List<String> lines = new CopyOnWriteArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getMessage().startsWith(Services.DEMO_KEYS_LOGGED)) {
                    lines.add(record.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger logger = Logger.getLogger(Services.class.getName());
        logger.addHandler(handler);
        try {
            start(settings, keys -> true);
        } finally {
            logger.removeHandler(handler);
        }
        return lines;
    }

    private static boolean start(Map<String, String> settings, java.util.function.Predicate<ApiKeys> check) {
        try (Services services = Services.create(Config.just(ConfigSources.create(settings), ConfigSources.classpath("application.yaml")))) {
            services.installKeys();
            boolean result = check.test(services.apiKeys());
            assertThat(services.db().activeConnections()).isZero();
            return result;
        }
    }

    /** A key read's bound far off: these reads are about which keys work, not about waits. */
    private static lastseat.work.Deadline soon() {
        return lastseat.work.Deadline.after(java.time.Duration.ofSeconds(30), System.nanoTime());
    }
}
