package lastseat.ops;

import lastseat.config.OpsConfig;
import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The seat maps' reader against a real database: one reader per watched event whatever the number of
 * viewers, each viewer's first message a snapshot and then the changes, the reader stopping when its last
 * viewer leaves, and no more viewers than {@code ops.max-streams}.
 */
class SeatWatchTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.shared();

    private static final Duration WAIT = Duration.ofSeconds(5);

    @Test
    void twoViewersOfOneEventShareOneReaderAndEachSeesTheSnapshotThenTheSale() throws Exception {
        String event = app.newEvent("A1", "A2");
        SeatWatch watch = new SeatWatch(app.services().inventory(), new OpsConfig(Duration.ofMillis(50), 2, Duration.ofSeconds(1)));
        try (SeatWatch.Viewer one = watch.watch(event).orElseThrow(); SeatWatch.Viewer two = watch.watch(event).orElseThrow()) {
            Optional<SeatWatch.Viewer> third = watch.watch(event);
            SeatWatch.Message firstOfOne = one.next(WAIT).orElseThrow();
            SeatWatch.Message firstOfTwo = two.next(WAIT).orElseThrow();
            int readers = watch.readers();

            assertThat(app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1").status()).isEqualTo(201);
            String seen = untilSold(one);

            assertThat(third).as("past ops.max-streams").isEmpty();
            assertThat(readers).isEqualTo(1);
            assertThat(firstOfOne.name()).isEqualTo("snapshot");
            assertThat(firstOfOne.data()).contains("\"seat\":\"A1\",\"state\":\"AVAILABLE\"").contains("\"seat\":\"A2\"");
            assertThat(firstOfTwo.data()).isEqualTo(firstOfOne.data());
            assertThat(seen).contains("\"seat\":\"A1\",\"state\":\"SOLD\"").doesNotContain("A2");
            assertThat(untilSold(two)).isEqualTo(seen);
        }
        long until = System.nanoTime() + WAIT.toNanos();
        while (watch.readers() > 0 && System.nanoTime() < until) {
            Thread.sleep(20);
        }

        assertThat(watch.readers()).as("the reader stops with its last viewer").isZero();
        assertThat(watch.open()).isZero();
        watch.close();
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void closingTheWatchEndsEveryViewersStream() throws Exception {
        String event = app.newEvent("A1");
        SeatWatch watch = new SeatWatch(app.services().inventory(), new OpsConfig(Duration.ofMillis(50), 5, Duration.ofSeconds(1)));
        try (SeatWatch.Viewer viewer = watch.watch(event).orElseThrow()) {
            assertThat(viewer.next(WAIT).orElseThrow().name()).isEqualTo("snapshot");

            watch.close();

            assertThat(viewer.next(WAIT)).contains(SeatWatch.END);
            assertThat(watch.watch(event)).as("a closed watch takes no viewer").isEmpty();
        }
        assertThat(watch.open()).isZero();
        Invariants.resourcesCameBack(app);
    }

    /** The first change message that shows A1 sold (several may come while it moves through HELD). */
    private static String untilSold(SeatWatch.Viewer viewer) throws InterruptedException {
        long until = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < until) {
            Optional<SeatWatch.Message> message = viewer.next(Duration.ofMillis(100));
            if (message.isPresent() && message.get().name().equals("change") && message.get().data().contains("SOLD")) {
                return message.get().data();
            }
        }
        throw new AssertionError("A1 was never seen sold");
    }
}
