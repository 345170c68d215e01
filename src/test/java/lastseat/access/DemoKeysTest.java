package lastseat.access;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import lastseat.Services;
import lastseat.testkit.Instance;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo's keys are printed in the README: a database once run with them (bin/run) must not keep them
 * working once a start is made without the demo, and a demo key revoked stays revoked when the demo
 * starts again.
 */
class DemoKeysTest {

    @Test
    void aStartWithoutTheDemoRevokesTheDemosPublishedKeysAndADemoStartDoesNotBringARevokedOneBack() throws Exception {
        Path dir = Files.createTempDirectory("lastseat-demo-keys");
        Map<String, String> demo = Map.of("db.url", "jdbc:h2:file:" + dir.resolve("db"), "demo.create-keys", "true");
        Map<String, String> production = Map.of("db.url", "jdbc:h2:file:" + dir.resolve("db"), "demo.create-keys", "false",
                                                "access.operator-key", "ls_1234567890abcdef_0123456789abcdef0123456789abcdef");

        boolean demoWorked = start(demo, keys -> keys.caller(Instance.DEMO_CLIENT_KEY).isPresent()
                                                 && keys.caller(Instance.DEMO_OPERATOR_KEY).isPresent());
        boolean demoAfterProduction = start(production, keys -> keys.caller(Instance.DEMO_CLIENT_KEY).isPresent()
                                                                || keys.caller(Instance.DEMO_OPERATOR_KEY).isPresent());
        boolean ownOperatorWorks = start(production, keys -> keys.caller("ls_1234567890abcdef_0123456789abcdef0123456789abcdef")
                .map(Caller::operator).orElse(false));
        boolean demoClientBack = start(demo, keys -> keys.caller(Instance.DEMO_CLIENT_KEY).isPresent());

        assertThat(demoWorked).isTrue();
        assertThat(demoAfterProduction).as("the published keys, after a start without the demo").isFalse();
        assertThat(ownOperatorWorks).isTrue();
        assertThat(demoClientBack).as("a revoked key stays revoked").isFalse();
    }

    private static boolean start(Map<String, String> settings, java.util.function.Predicate<ApiKeys> check) {
        try (Services services = Services.create(Config.just(ConfigSources.create(settings), ConfigSources.classpath("application.yaml")))) {
            services.installKeys();
            boolean result = check.test(services.apiKeys());
            assertThat(services.db().activeConnections()).isZero();
            return result;
        }
    }
}
