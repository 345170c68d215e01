package lastseat.db;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** Fast tier: the ids rows are made with are version 7 UUIDs whose text sorts by the millisecond they were made in. */
class TimeOrderedIdTest {

    @Test
    void anIdIsAVersionSevenUuidThatCarriesTheMillisecondItWasMadeIn() {
        long before = System.currentTimeMillis();
        String id = TimeOrderedId.next();
        long after = System.currentTimeMillis();

        UUID uuid = UUID.fromString(id);
        assertThat(uuid.toString()).as("written as UUID#toString writes it").isEqualTo(id);
        assertThat(uuid.version()).as("version").isEqualTo(7);
        assertThat(uuid.variant()).as("variant (RFC 9562)").isEqualTo(2);
        assertThat(uuid.getMostSignificantBits() >>> 16).as("the millisecond it was made in").isBetween(before, after);
    }

    @Test
    void idsMadeInLaterMillisecondsSortAfterAndNoTwoAreAlike() throws InterruptedException {
        List<String> made = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (int round = 0; round < 5; round++) {
            for (int i = 0; i < 20_000; i++) {
                String id = TimeOrderedId.next();
                assertThat(seen.add(id)).as("a new id: " + id).isTrue();
                if (i == 0) {
                    made.add(id);
                }
            }
            long now = System.currentTimeMillis();
            while (System.currentTimeMillis() == now) {
                Thread.sleep(1);
            }
        }
        assertThat(made).as("the first id of each round, each round a millisecond or more after the last").isSorted();
        // Within one millisecond the order is the random bits': 74 of them, so repeats need billions of ids a millisecond.
        assertThat(seen).hasSize(100_000);
    }
}
