package lastseat.web;

import com.fasterxml.jackson.core.util.BufferRecycler;
import com.fasterxml.jackson.core.util.RecyclerPool;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * {@link Json}'s limit on a string's length holds whatever its shared buffers were used for before.
 * Jackson checks a string's length only when the string overflows its buffer, so a buffer longer than
 * the limit, kept in the pool by an earlier request, would take a longer string whole and unchecked.
 * Seen in the full suite: FuzzTest's 12,000-character value of an unknown field refused as
 * {@code unknown-field} on one database and as over the limit on the other.
 */
class JsonLimitsTest {
    /** More sets than the pool keeps, so that whichever set the read draws was given the long buffer. */
    private static final int SETS = 2 * 64;

    /** Two fields, one left out below: Jackson then holds the fields after the first, values and all, until the end. */
    record Body(String name, String note) {
    }

    @Test
    void aStringOverTheLimitIsRefusedAsSuchEvenWhenEveryPooledBufferSetWasGivenALongBuffer() {
        RecyclerPool<BufferRecycler> pool = Json.bufferPool();
        List<BufferRecycler> sets = new ArrayList<>();
        for (int i = 0; i < SETS; i++) {
            sets.add(pool.acquireAndLinkPooled());
        }
        for (BufferRecycler set : sets) {
            // What a large answer or body leaves behind: a text buffer of 20,000 characters.
            set.releaseCharBuffer(BufferRecycler.CHAR_TEXT_BUFFER, new char[20_000]);
            set.releaseToPool();
        }
        byte[] body = ("{\"name\":\"ok\",\"a\":\"" + "x".repeat(12_000) + "\"}").getBytes(StandardCharsets.UTF_8);

        Problem refused = catchThrowableOfType(Problem.class, () -> Json.read(body, Body.class));

        assertThat(refused).as("a 12,000-character string under an unknown field's name").isNotNull();
        assertThat(refused.kind()).isEqualTo("malformed-json");
        assertThat(refused.detail()).startsWith("The request body is over a limit");
        assertThat(Json.read("{\"name\":\"ok\",\"note\":\"fine\"}".getBytes(StandardCharsets.UTF_8), Body.class).note())
                .as("a body within the limits still reads").isEqualTo("fine");
    }
}
