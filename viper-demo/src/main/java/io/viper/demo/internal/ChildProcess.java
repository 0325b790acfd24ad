package io.viper.demo.internal;

import io.viper.errors.ViperTimeoutException;
import io.viper.errors.ViperException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The driver's side of one demo process: its standard output read as {@link DemoEvents} on a thread of
 * its own, its standard error in a log file, commands written to its standard input.
 *
 * <p>The driver's thread calls {@link #awaitReady}, {@link #send}, {@link #checkAlive}, {@link #finish}
 * and {@link #close}; {@link #progress()} and {@link #finished()} may be read from any thread.
 *
 * @param <R> the process's ready event
 * @param <P> its progress event
 * @param <S> its result event
 */
public final class ChildProcess<R, P, S> implements AutoCloseable {
    /** Processes still running, ended by a shutdown hook if the demo is interrupted (Ctrl-C). */
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroy), "demo-children"));
    }

    private final String role;
    private final String policy;
    private final Process process;
    private final Writer stdin;
    private final Path log;
    private final DemoEvents.Protocol<R, P, S> protocol;
    private final CompletableFuture<R> ready = new CompletableFuture<>();
    private final CompletableFuture<S> result = new CompletableFuture<>();
    private volatile P progress;

    private ChildProcess(String role, String policy, Process process, Path log, DemoEvents.Protocol<R, P, S> protocol) {
        this.role = role;
        this.policy = policy;
        this.process = process;
        this.log = log;
        this.protocol = protocol;
        this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name("demo-" + role).start(this::readLoop);
    }

    /**
     * Starts {@code command}, its standard error going to {@code log}.
     *
     * @param role {@code producer} or {@code consumer}, for messages
     * @param policy the policy the process runs, for messages
     */
    public static <R, P, S> ChildProcess<R, P, S> start(String role, String policy, List<String> command, Path log,
            DemoEvents.Protocol<R, P, S> protocol) throws IOException {
        Process p = new ProcessBuilder(command).redirectError(log.toFile()).start();
        LIVE.add(p);
        return new ChildProcess<>(role, policy, p, log, protocol);
    }

    private void readLoop() {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                Object event;
                try {
                    event = protocol.decode(line);
                } catch (IOException e) {
                    continue; // not an event: a library printing on stdout
                }
                if (protocol.progress().isInstance(event)) {
                    progress = protocol.progress().cast(event);
                } else if (protocol.ready().isInstance(event)) {
                    ready.complete(protocol.ready().cast(event));
                } else {
                    result.complete(protocol.result().cast(event));
                }
            }
        } catch (IOException e) {
            // the process ended; checkAlive reports it with the log
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
                    throw new ViperTimeoutException("demo: the " + role + " of policy " + policy
                            + " was not ready within " + timeout.toSeconds() + " s (log: " + log + ")");
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
        if (!process.isAlive() && !result.isDone()) {
            process.waitFor(1, TimeUnit.SECONDS); // let the reader drain the last lines
            Thread.sleep(100);
            if (!result.isDone()) {
                throw new ViperException(ViperException.Reason.INTERNAL, "demo: the " + role + " of policy " + policy
                        + " exited with status " + process.exitValue() + ": " + lastLine() + " (log: " + log + ")");
            }
        }
    }

    private String lastLine() {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            for (int i = lines.size() - 1; i >= 0; i--) {
                String l = lines.get(i).strip();
                if (l.startsWith("Demo") || l.startsWith("Exception") || l.contains("Exception:")) {
                    return l;
                }
            }
            return lines.isEmpty() ? "no output" : lines.getLast().strip();
        } catch (IOException e) {
            return "no log";
        }
    }

    /** Writes one command line; a process that has already exited is not an error here ({@link #checkAlive} is). */
    public void send(String command) throws IOException {
        try {
            stdin.write(command + "\n");
            stdin.flush();
        } catch (IOException e) {
            if (process.isAlive()) {
                throw e;
            }
        }
    }

    /** Closes the process's standard input and waits up to {@code timeout} for it to exit, then ends it. */
    public void finish(Duration timeout) throws InterruptedException {
        try {
            stdin.close();
        } catch (IOException e) {
            // already gone
        }
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroy();
        }
    }

    /** Ends the process if it still runs (forcibly after 5 s). */
    @Override
    public void close() {
        LIVE.remove(process);
        if (process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
            }
        }
    }
}
