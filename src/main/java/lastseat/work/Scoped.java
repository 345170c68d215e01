package lastseat.work;

import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.StructuredTaskScope;
import java.util.concurrent.StructuredTaskScope.Joiner;
import java.util.concurrent.StructuredTaskScope.Subtask;

/**
 * The one owner of {@link StructuredTaskScope} (JEP 505, preview in JDK 25; the API changes again in
 * JDK 26, so it stays in this class).
 *
 * <p>Contract: when a method returns or throws, no subtask it forked is still running (I5). A
 * subtask failure interrupts the siblings; the deadline interrupts all of them; either way the
 * scope waits for every subtask before this method leaves. A subtask's runtime exception is
 * rethrown as it is, so the caller sees the domain outcome (fraud declined, check down).
 *
 * <p>Hazard: waiting for the subtasks is only prompt if each one stops when interrupted; every
 * outside call made inside must therefore have its own timeout within the remaining deadline.
 * The caller's thread is never interrupted by these scopes, so it can still record the outcome in
 * the database after a deadline.
 */
public final class Scoped {
    private Scoped() {
    }

    public record Both<A, B>(A first, B second) {
    }

    /** Runs {@code first} and {@code second} concurrently; both must succeed before the deadline. */
    public static <A, B> Both<A, B> both(String name, Deadline deadline, Callable<A> first, Callable<B> second)
            throws DeadlinePassed, InterruptedException {
        Duration remaining = startable(name, deadline);
        try (var scope = StructuredTaskScope.open(Joiner.<Object>awaitAllSuccessfulOrThrow(),
                                                  cf -> cf.withTimeout(remaining).withName(name))) {
            Subtask<A> a = scope.fork(first);
            Subtask<B> b = scope.fork(second);
            join(name, scope);
            return new Both<>(a.get(), b.get());
        }
    }

    /** Runs {@code task} in its own thread, interrupted and awaited when the deadline passes. */
    public static <T> T within(String name, Deadline deadline, Callable<T> task)
            throws DeadlinePassed, InterruptedException {
        Duration remaining = startable(name, deadline);
        try (var scope = StructuredTaskScope.open(Joiner.<T>awaitAllSuccessfulOrThrow(),
                                                  cf -> cf.withTimeout(remaining).withName(name))) {
            Subtask<T> subtask = scope.fork(task);
            join(name, scope);
            return subtask.get();
        }
    }

    /** One item's work in {@link #each}. */
    @FunctionalInterface
    public interface Action<T> {
        void run(T item) throws InterruptedException;
    }

    /**
     * Runs {@code action} on every item, at most {@code atOnce} at a time (on up to {@code atOnce} threads,
     * each taking the next item in order when its last is done), and returns once every one is done. No deadline: each action bounds itself. The
     * first action to fail interrupts the others, and its exception leaves here once they have ended (one
     * that threw {@link InterruptedException} of its own as a {@link SubtaskFailed}); an interrupt of the
     * caller's thread interrupts them all and leaves as {@link InterruptedException}.
     */
    public static <T> void each(String name, List<T> items, int atOnce, Action<T> action) throws InterruptedException {
        Queue<T> left = new ConcurrentLinkedQueue<>(items);
        try (var scope = StructuredTaskScope.open(Joiner.<Object>awaitAllSuccessfulOrThrow(), cf -> cf.withName(name))) {
            for (int i = 0; i < Math.min(atOnce, items.size()); i++) {
                scope.fork(() -> {
                    for (T item = left.poll(); item != null; item = left.poll()) {
                        action.run(item);
                    }
                    return null;
                });
            }
            join(name, scope);
        } catch (DeadlinePassed impossible) {
            throw new IllegalStateException(name + " has no deadline", impossible);
        }
    }

    private static Duration startable(String name, Deadline deadline) throws DeadlinePassed {
        Duration remaining = deadline.remaining();
        if (remaining.isZero()) {
            throw new DeadlinePassed(name);
        }
        return remaining;
    }

    private static void join(String name, StructuredTaskScope<?, ?> scope) throws DeadlinePassed, InterruptedException {
        try {
            scope.join();
        } catch (StructuredTaskScope.TimeoutException e) {
            throw new DeadlinePassed(name);
        } catch (StructuredTaskScope.FailedException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException runtime) {
                throw runtime;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw new SubtaskFailed(name, cause);
        }
    }

    /** A subtask failed with a checked exception (an I/O failure, say). */
    public static final class SubtaskFailed extends RuntimeException {
        SubtaskFailed(String name, Throwable cause) {
            super(name + " failed: " + cause, cause);
        }
    }
}
