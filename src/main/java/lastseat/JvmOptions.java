package lastseat;

import com.sun.management.HotSpotDiagnosticMXBean;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The JVM options lastseat is run and measured with ({@code jvm.options}, a java launcher argument file kept
 * with the service's resources), and which of them the running JVM lacks.
 *
 * <p>Hazard: a JVM option cannot be set from inside the process it governs. A production start that leaves the
 * file out ({@code java -jar target/lastseat.jar}) runs with the JVM's defaults, which on two cores spend much
 * of an on-sale compiling; start-up can only say so ({@link Main#main}), not mend it.
 */
final class JvmOptions {
    /** The file, on the class path and, from the project's top directory, at {@code src/main/resources/jvm.options}. */
    static final String RESOURCE = "/jvm.options";
    private static final Pattern OPTION = Pattern.compile("-XX:(?:([+-])(\\w+)|(\\w+)=(\\S+))");

    private JvmOptions() {
    }

    /** One {@code -XX} option as written, its name and the value the JVM reports for it when set ({@code true}/{@code false} for flags). */
    record Option(String written, String name, String value) {
    }

    /** The options in {@link #RESOURCE}; a line that is not {@code -XX:Name=value}, {@code -XX:+Name} or {@code -XX:-Name} stops start-up. */
    static List<Option> wanted() {
        try (InputStream in = JvmOptions.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is missing from lastseat's class path");
            }
            return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<Option> parse(String file) {
        List<Option> options = new ArrayList<>();
        for (String line : file.split("\n")) {
            int comment = line.indexOf('#');
            for (String token : (comment < 0 ? line : line.substring(0, comment)).trim().split("\\s+")) {
                if (token.isEmpty()) {
                    continue;
                }
                Matcher m = OPTION.matcher(token);
                if (!m.matches()) {
                    throw new IllegalStateException(RESOURCE + ": '" + token + "' is not -XX:Name=value, -XX:+Name or -XX:-Name");
                }
                options.add(m.group(2) != null ? new Option(token, m.group(2), String.valueOf("+".equals(m.group(1))))
                                               : new Option(token, m.group(3), m.group(4)));
            }
        }
        return List.copyOf(options);
    }

    /** Each wanted option this JVM does not have, with the value it has instead (empty when it does not know the option). */
    static List<String> lacking(List<Option> wanted, Function<String, Optional<String>> current) {
        List<String> lacking = new ArrayList<>();
        for (Option option : wanted) {
            Optional<String> value = current.apply(option.name());
            if (!value.map(option.value()::equals).orElse(false)) {
                lacking.add(option.written() + " (this JVM: " + value.orElse("no such option") + ")");
            }
        }
        return lacking;
    }

    /** What this JVM reports for a {@code -XX} option, if it has it. */
    static Optional<String> ofThisJvm(String name) {
        HotSpotDiagnosticMXBean hotSpot = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
        if (hotSpot == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(hotSpot.getVMOption(name).getValue());
        } catch (IllegalArgumentException unknown) {
            return Optional.empty();
        }
    }
}
