package lastseat.testkit;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

import static org.assertj.core.api.Assertions.assertThat;

/** The server's clock read from {@code Server-Timing}, and its absence said as absence. */
class AnswerTest {

    private static Answer withTiming(String value) {
        Map<String, List<String>> headers = value == null ? Map.of() : Map.of("server-timing", List.of(value));
        return new Answer(503, headers, new byte[0], 77);
    }

    @Test
    void serverMicrosReadsTheAppDurationToATenthOfAMillisecond() {
        assertThat(withTiming("app;dur=12.3").serverMicros()).isEqualTo(OptionalLong.of(12_300));
        assertThat(withTiming("app;dur=4").serverMicros()).isEqualTo(OptionalLong.of(4_000));
        assertThat(withTiming("app;dur=0.5, db;dur=0.2").serverMicros()).isEqualTo(OptionalLong.of(500));
    }

    @Test
    void serverMicrosIsEmptyWithoutTheHeaderInsteadOfTakingTheCallersClock() {
        assertThat(withTiming(null).serverMicros()).isEmpty();
        assertThat(withTiming("db;dur=3").serverMicros()).isEmpty();
        assertThat(withTiming("app;dur=soon").serverMicros()).isEmpty();
        assertThat(withTiming(null).serverMillis()).isEqualTo(77);
    }
}
