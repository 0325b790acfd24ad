package io.viper.scheduler;

import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * Runs a policy's refits away from the training thread, one at a time: the training thread hands a job over
 * ({@link #submit}) and later picks up the newest finished result ({@link #take}) without ever waiting for a fit. A job
 * submitted while another runs is dropped (the next one will see newer data).
 *
 * <p>{@link #submit} and {@link #take} belong to the training thread; the job runs on the executor.
 *
 * @param <T> what a refit produces
 */
final class BackgroundRefits<T> {
    /** A daemon thread per refit, so that a policy needs no closing. */
    static final Executor DAEMON =
            job -> Thread.ofPlatform().daemon().name("viper-refit").start(job);

    private final Executor executor;
    private final AtomicBoolean running = new AtomicBoolean();
    private final AtomicReference<T> done = new AtomicReference<>();

    /** Runs jobs on {@code executor} ({@link #DAEMON}; {@code Runnable::run} runs them in the caller, for tests). */
    BackgroundRefits(Executor executor) {
        this.executor = executor;
    }

    /** Starts {@code job} unless one is running; returns whether it started. A job that throws leaves no result. */
    boolean submit(Supplier<T> job) {
        if (!running.compareAndSet(false, true)) {
            return false;
        }
        executor.execute(() -> {
            try {
                T result = job.get();
                if (result != null) {
                    done.set(result);
                }
            } finally {
                running.set(false);
            }
        });
        return true;
    }

    /** The newest result not taken yet, or null. */
    T take() {
        return done.getAndSet(null);
    }

    /** Whether a job is running now. */
    boolean busy() {
        return running.get();
    }
}
