package lastseat.drills;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code bin/drill}'s options for a server run with other timings than the shipped ones: its deadline and its
 * answer's reserve set the bound every answer is held to (I5) and when the server's work ends, which the
 * long-tail drill's expected misses follow.
 */
class DrillsOptionsTest {

    @Test
    void withoutOptionsTheDrillsExpectTheShippedDeadlineAndReserve() {
        Settings settings = Drills.settings(Drills.parse(new String[] {"long-tail"}, new ArrayList<>()));

        assertThat(settings.workTime()).as("800 ms less 100 ms, as application.yaml ships them").isEqualTo(Duration.ofMillis(700));
        assertThat(settings.answerBoundMillis()).as("the deadline and bin/drill's 150 ms of slack").isEqualTo(950);
    }

    @Test
    void theTargetsDeadlineAndReserveSetWhenItsWorkEndsAndWhenItMustHaveAnswered() {
        List<String> names = new ArrayList<>();
        Settings settings = Drills.settings(Drills.parse(new String[] {"long-tail", "--deadline", "1000", "--answer-reserve", "200"}, names));

        assertThat(names).containsExactly("long-tail");
        assertThat(settings.workTime()).isEqualTo(Duration.ofMillis(800));
        assertThat(settings.answerBoundMillis()).isEqualTo(1150);
    }

    @Test
    void aReserveThatIsNoNumberOrLongerThanHalfTheDeadlineIsRefusedNamingTheOption() {
        assertThatThrownBy(() -> Drills.parse(new String[] {"long-tail", "--answer-reserve", "soon"}, new ArrayList<>()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--answer-reserve");
        assertThatThrownBy(() -> Drills.settings(Drills.parse(new String[] {"long-tail", "--deadline", "300", "--answer-reserve", "200"},
                                                              new ArrayList<>())))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--answer-reserve is at most half of --deadline")
                .hasMessageContaining("200 of 300 ms");
    }
}
