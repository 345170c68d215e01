package lastseat.purchase;

import lastseat.web.Problem;

import java.time.Duration;
import java.util.Map;

/** 504: the purchase could not finish within its deadline; the hold was released, nothing charged. */
final class DeadlineExceeded extends Problem {
    DeadlineExceeded(Duration deadline, String during) {
        super(504, "deadline-passed", "Deadline passed",
              "The purchase did not finish within " + deadline.toMillis() + " ms (" + during
              + "); the seats were released and nothing was charged",
              Map.of("deadlineMs", deadline.toMillis()), null, null);
    }
}
