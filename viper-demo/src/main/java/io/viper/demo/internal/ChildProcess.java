package io.viper.demo.internal;

import io.viper.demo.ChildJvm;
import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The driver's side of one demo process: a {@link ChildJvm} whose standard output is read as {@link DemoEvents}, its
 * standard error in a log file, commands written to its standard input.
 *
 * <p>The driver's thread calls {@link #awaitReady}, {@link #send}, {@link #checkAlive}, {@link #finish} and
 * {@link #close}; {@link #progress()} and {@link #finished()} may be read from any thread.
 *
 * @param <R> the process's ready event
 * @param <P> its progress event
 * @param <S> its result event
 */
public final class ChildProcess<R, P, S> implements AutoCloseable {
    private final String what;
    private final Path log;
    private final DemoEvents.Protocol<R, P, S> protocol;
    private final CompletableFuture<R> ready = new CompletableFuture<>();
    private final CompletableFuture<S> result = new CompletableFuture<>();
    private final ChildJvm jvm;
    private volatile P progress;

    private ChildProcess(String what, List<String> command, Path log, DemoEvents.Protocol<R, P, S> protocol)
            throws IOException {
        this.what = what;
        this.log = log;
        this.protocol = protocol;
        this.jvm = ChildJvm.start(what, command, Optional.of(log), this::onLine);
    }

    /**
     * Starts {@code command}, its standard error going to {@code log}.
     *
     * @param role {@code producer} or {@code consumer}, for messages
     * @param policy the policy the process runs, for messages
     */
    public static <R, P, S> ChildProcess<R, P, S> start(
            String role, String policy, List<String> command, Path log, DemoEvents.Protocol<R, P, S> protocol)
            throws IOException {
        return new ChildProcess<>("demo: the " + role + " of policy " + policy, command, log, protocol);
    }

    /** On the reader thread: one line of the process's standard output. */
    private void onLine(String line) {
        Object event;
        try {
            event = protocol.decode(line);
        } catch (IOException e) {
            return; // not an event: a library printing on stdout
        }
        if (protocol.progress().isInstance(event)) {
            progress = protocol.progress().cast(event);
        } else if (protocol.ready().isInstance(event)) {
            ready.complete(protocol.ready().cast(event));
        } else {
            result.complete(protocol.result().cast(event));
        }
    }

    /** The latest progress event, or null before the first. */
    public P progress() {
        return progress;
    }

    /** Whether the result event has arrived. */
    public boolean finished() {
        return result.isDone();
    }

    /** The result event; call after {@link #finished()} returned true. */
    public S result() {
        return result.join();
    }

    /**
     * Waits for the ready event.
     *
     * @throws ViperException with reason TIMEOUT after {@code timeout}, or INTERNAL when the process exits first
     */
    public R awaitReady(Duration timeout) throws InterruptedException, ExecutionException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try {
                return ready.get(100, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                checkAlive();
                if (System.nanoTime() > deadline) {
                    throw new ViperTimeoutException(
                            what + " was not ready within " + timeout.toSeconds() + " s (log: " + log + ")");
                }
            }
        }
    }

    /**
     * Throws when the process has exited without a result.
     *
     * @throws ViperException with reason INTERNAL, naming the exit status, the log's last telling line and the log
     */
    public void checkAlive() throws InterruptedException {
        if (!jvm.isAlive() && !result.isDone()) {
            jvm.awaitDrained(Duration.ofSeconds(1)); // the last lines may hold the result
            if (!result.isDone()) {
                throw jvm.exited("");
            }
        }
    }

    /** Writes one command line; a process that has already exited is not an error here ({@link #checkAlive} is). */
    public void send(String command) throws IOException {
        jvm.send(command);
    }

    /** Closes the process's standard input and waits up to {@code timeout} for it to exit, then ends it. */
    public void finish(Duration timeout) throws InterruptedException {
        jvm.finish(timeout);
    }

    /** Ends the process if it still runs (forcibly after 5 s). */
    @Override
    public void close() {
        jvm.close();
    }
}
