package lastseat.web;

import lastseat.input.InvalidInput;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * Fast tier: the one rule for client text. Control characters (NUL first of all), unpaired surrogates
 * and over-long values are refused ({@link InvalidInput}, which the edge answers 400) naming the field and
 * not the value; everything else, a character outside the BMP included, passes unchanged.
 */
@Tag("fast")
class TextTest {

    @ParameterizedTest(name = "U+{0}")
    @ValueSource(ints = {0x0000, 0x0001, 0x0009, 0x000A, 0x000D, 0x001B, 0x001F, 0x007F, 0x0085, 0x009F})
    void aControlCharacterIsRefusedNamingTheFieldAndNotTheValue(int control) {
        Problem problem = refused("buyer.id", "ada" + (char) control + "lovelace", 100);

        assertThat(problem.status()).isEqualTo(400);
        assertThat(problem.kind()).isEqualTo("invalid-field");
        assertThat(problem.getMessage()).isEqualTo("buyer.id must not contain control characters (such as NUL, tab or line breaks)")
                                        .doesNotContain("ada");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"\ud800", "x\udbff", "\udc00x", "a\udc00\ud800b", "\ud83d"})
    void anUnpairedSurrogateIsRefusedAsNotUnicode(String text) {
        assertThat(refused("name", text, 200).getMessage()).isEqualTo("name is not valid Unicode text (it has an unpaired surrogate)");
    }

    @Test
    void aValueLongerThanItsFieldIsRefusedSayingHowLongItMayBe() {
        assertThat(refused("eventId", "e".repeat(65), 64).getMessage()).isEqualTo("eventId must be at most 64 characters long");
        assertThat(Text.checked("eventId", "e".repeat(64), 64)).hasSize(64);
    }

    @Test
    void printableTextOfAnyScriptPassesUnchangedAndNullStaysNull() {
        for (String text : new String[] {"ada", "Zoë Ångström", "山田太郎", "🎟️ seat", "a b", "\u200b", "\ud83c\udf9f"}) {
            assertThat(Text.checked("buyer.id", text, 100)).isSameAs(text);
            assertThat(Text.storable(text, 100)).isTrue();
        }
        assertThat(Text.checked("buyer.id", null, 100)).isNull();
        assertThat(Text.storable(null, 100)).isFalse();
        assertThat(Text.storable("a\u0000", 100)).isFalse();
    }

    @Test
    void anOutsideServicesReasonIsCleanedToTheSameRuleAndCut() {
        assertThat(Text.cleaned("card\u0000 declined\n", 100)).isEqualTo("card declined");
        assertThat(Text.cleaned("\ud800no\udc00 funds \ud83c\udf9f", 100)).isEqualTo("no funds \ud83c\udf9f");
        assertThat(Text.cleaned("x".repeat(150), 100)).hasSize(100);
        assertThat(Text.cleaned("x".repeat(99) + "\ud83c\udf9f", 100)).as("a pair is never cut in two").isEqualTo("x".repeat(99));
        assertThat(Text.cleaned("\u0000\t ", 100)).isNull();
        assertThat(Text.cleaned(null, 100)).isNull();
    }

    /** The problem the edge answers for the refusal. */
    private static Problem refused(String field, String value, int max) {
        InvalidInput refusal = catchThrowableOfType(InvalidInput.class, () -> Text.checked(field, value, max));
        assertThat(refusal).as("%s refused", field).isNotNull();
        return new Edge(Duration.ofSeconds(1)).problemFor(refusal, "/purchases", "unexpected");
    }
}
