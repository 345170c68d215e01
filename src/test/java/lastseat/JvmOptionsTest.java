package lastseat;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code jvm.options}, read as start-up reads it, against this test JVM, which surefire starts without it
 * (its argLine has only --enable-preview): the check names what a production start that forgot the file lacks.
 */
class JvmOptionsTest {

    @Test
    void everyOptionInTheFileIsOneThisJvmKnows() {
        List<JvmOptions.Option> wanted = JvmOptions.wanted();

        assertThat(wanted).extracting(JvmOptions.Option::name).containsExactly("MaxInlineLevel", "InlineSmallCode", "FreqInlineSize");
        assertThat(wanted).allSatisfy(option -> assertThat(JvmOptions.ofThisJvm(option.name())).as(option.written()).isPresent());
    }

    @Test
    void aJvmStartedWithoutTheFileIsToldEachOptionItLacksAndTheValueItHasInstead() {
        List<String> lacking = JvmOptions.lacking(JvmOptions.wanted(), JvmOptions::ofThisJvm);

        // The JVM's own defaults on x86-64 and aarch64 alike.
        assertThat(lacking).containsExactly("-XX:MaxInlineLevel=6 (this JVM: 15)", "-XX:InlineSmallCode=1000 (this JVM: 2500)",
                                            "-XX:FreqInlineSize=100 (this JVM: 325)");
    }

    @Test
    void aJvmWithTheOptionsLacksNoneAndAnUnknownOptionIsNamed() {
        List<JvmOptions.Option> wanted = JvmOptions.parse("""
                # a comment
                -XX:MaxInlineLevel=6   # and a comment after
                -XX:+UseG1GC -XX:-UseLargePages
                -XX:NoSuchOptionHere=1
                """);

        assertThat(wanted).extracting(JvmOptions.Option::value).containsExactly("6", "true", "false", "1");
        assertThat(JvmOptions.lacking(wanted.subList(0, 3), name -> Optional.of(switch (name) {
            case "MaxInlineLevel" -> "6";
            case "UseG1GC" -> "true";
            default -> "false";
        }))).isEmpty();
        assertThat(JvmOptions.lacking(wanted, JvmOptions::ofThisJvm)).contains("-XX:NoSuchOptionHere=1 (this JVM: no such option)");
    }

    @Test
    void aLineThatIsNotAnXxOptionStopsStartUpNamingIt() {
        assertThatThrownBy(() -> JvmOptions.parse("-Xmx512m\n")).hasMessageContaining("'-Xmx512m' is not -XX:Name=value");
        assertThatThrownBy(() -> JvmOptions.parse("--enable-preview\n")).hasMessageContaining("'--enable-preview'");
    }
}
