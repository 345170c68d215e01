package lastseat.work;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One background job of this process: runs {@code tick} on its own virtual thread, then waits
 * {@code interval}, until closed; a job started with a batch size runs its next tick at once after a
 * tick that moved a whole batch, so that a backlog is worked off back to back. A tick that fails is
 * logged and the next one runs as planned (after the interval); a tick is expected to do a bounded
 * amount of work (a batch) and to claim every row it touches with a compare-and-set, so that the same
 * job on several instances never processes a row twice.
 *
 * <p>Contract: {@link #close()} interrupts the thread and waits for the tick in progress to end
 * (at most {@code closeWait}); interrupting is how a tick's outside call is cancelled, so a tick
 * must end promptly when interrupted. A closed worker starts no further tick even when something
 * inside the last one swallowed the interrupt (a library that catches {@link InterruptedException}
 * and carries on): the loop also checks a flag of its own.
 */
public final class Worker implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Worker.class.getName());
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

    /** One pass of the job; returns how many rows it moved (for the log and the tests). */
    @FunctionalInterface
    public interface Tick {
        int run() throws InterruptedException;
    }

    private final String name;
    private final Thread thread;
    private final AtomicBoolean closed;

    private Worker(String name, Thread thread, AtomicBoolean closed) {
        this.name = name;
        this.thread = thread;
        this.closed = closed;
    }

    public static Worker start(String name, Duration interval, Tick tick) {
        return start(name, interval, Integer.MAX_VALUE, tick);
    }

    /** As {@link #start(String, Duration, Tick)}, with no wait after a tick that returned {@code fullBatch} or more. */
    public static Worker start(String name, Duration interval, int fullBatch, Tick tick) {
        AtomicBoolean closed = new AtomicBoolean();
        Thread thread = Thread.ofVirtual().name("worker-" + name).start(() -> loop(name, interval, fullBatch, tick, closed));
        return new Worker(name, thread, closed);
    }

    private static void loop(String name, Duration interval, int fullBatch, Tick tick, AtomicBoolean closed) {
        while (!closed.get() && !Thread.currentThread().isInterrupted()) {
            try {
                int moved = tick.run();
                if (closed.get()) {
                    return;
                }
                if (moved < fullBatch) {
                    Thread.sleep(interval);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                if (closed.get()) {
                    LOG.log(Level.WARNING, "background job " + name + " failed while it was being closed", e);
                    return;
                }
                LOG.log(Level.WARNING, "background job " + name + " failed; it runs again in " + interval.toMillis() + " ms", e);
                try {
                    Thread.sleep(interval);
                } catch (InterruptedException stop) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    @Override
    public void close() {
        closed.set(true);
        thread.interrupt();
        try {
            if (!thread.join(CLOSE_WAIT)) {
                LOG.warning("background job " + name + " did not stop within " + CLOSE_WAIT.toSeconds() + " s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
