package lastseat.work;

import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * When each step of one purchase started and ended, and how it ended. Written by the purchase's own
 * thread and its subtasks (hence synchronized), persisted with the purchase's final transition and
 * shown by {@code GET /purchases/{id}}.
 *
 * <p>Hazard: an outcome is shown to the buyer. A step that fails with an {@link Outcome} records the
 * sentence it carries; any other failure is recorded as "failed", and its class and message (a
 * library's words, a database's, a class name) go to the log, never into the timeline.
 */
public final class Timeline {
    private static final Logger LOG = Logger.getLogger(Timeline.class.getName());
    public static final int MAX_OUTCOME = 200;
    private final List<Step> steps = new ArrayList<>();
    private final Clock clock;

    /** Times steps on {@code clock}, the one the purchase's other records use. */
    public Timeline(Clock clock) {
        this.clock = clock;
    }

    public record Step(String name, Instant startedAt, Instant endedAt, String outcome) {
    }

    /** A failure that says how its step ended in words written for the buyer: what the step's outcome shows. */
    public interface Outcome {
        String outcome();
    }

    /** Runs {@code work} as the step {@code name}; an interrupt is recorded as "cancelled" and rethrown. */
    public <T> T step(String name, Callable<T> work) throws Exception {
        int index = start(name);
        try {
            T result = work.call();
            end(index, "ok");
            return result;
        } catch (InterruptedException e) {
            end(index, "cancelled");
            throw e;
        } catch (Exception e) {
            end(index, Thread.currentThread().isInterrupted() ? "cancelled" : outcomeOf(name, e));
            throw e;
        }
    }

    public synchronized int start(String name) {
        steps.add(new Step(name, clock.instant(), null, null));
        return steps.size() - 1;
    }

    /** Ends a step; the outcome is cut to {@value #MAX_OUTCOME} characters (it is stored). */
    public synchronized void end(int index, String outcome) {
        Step step = steps.get(index);
        String text = outcome != null && outcome.length() > MAX_OUTCOME ? outcome.substring(0, MAX_OUTCOME) : outcome;
        steps.set(index, new Step(step.name(), step.startedAt(), clock.instant(), text));
    }

    /** Ends every step still open, e.g. the subtask the deadline interrupted before it could. */
    public synchronized void endOpen(String outcome) {
        for (int i = 0; i < steps.size(); i++) {
            if (steps.get(i).endedAt() == null) {
                end(i, outcome);
            }
        }
    }

    public synchronized List<Step> steps() {
        return List.copyOf(steps);
    }

    /** What a person reads in the timeline: the sentence an {@link Outcome} carries, else only that it failed. */
    private static String outcomeOf(String step, Exception e) {
        if (e instanceof Outcome told && told.outcome() != null && !told.outcome().isBlank()) {
            return told.outcome();
        }
        LOG.log(Level.WARNING, "step " + step + " failed unexpectedly; its timeline shows only \"failed\"", e);
        return "failed";
    }
}
