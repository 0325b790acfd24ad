package io.viper.demo;

import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A child JVM driven over its standard streams: the one harness of {@code viper demo}'s producer and consumer processes
 * and of {@code viper bench transfer}'s consumer. It runs a main class on this JVM's class path ({@link #command}),
 * reads the child's standard output line by line on a thread of its own (each line goes to the caller's handler, or
 * without one into a queue that {@link #awaitLine} reads), writes commands to its standard input ({@link #send}), and
 * ends it on {@link #close}, or from a shutdown hook should this JVM be interrupted (Ctrl-C). Its standard error goes
 * to a log file, or to this JVM's.
 *
 * <p>Threads: the driver's thread calls {@link #awaitLine}, {@link #send}, {@link #finish} and {@link #close}; a
 * handler runs on the reader thread; {@link #isAlive} and {@link #exited} may be called from any thread.
 */
public final class ChildJvm implements AutoCloseable {
    /** Processes still running, ended by a shutdown hook if this JVM is interrupted. */
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();
    /** Queued after the last line: the child closed its standard output. */
    private static final Object END = new Object();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroy), "viper-child-jvms"));
    }

    private final String name;
    private final Process process;
    private final Writer stdin;
    private final Optional<Path> log;
    private final BlockingQueue<Object> lines = new LinkedBlockingQueue<>(); // output lines, then END
    private final CountDownLatch drained = new CountDownLatch(1);

    private ChildJvm(String name, Process process, Optional<Path> log, Consumer<String> onLine) {
        this.name = name;
        this.process = process;
        this.log = log;
        this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Consumer<String> sink = onLine == null ? lines::add : onLine;
        Thread.ofPlatform().daemon().name("child-" + name.replace(' ', '-')).start(() -> read(sink));
    }

    /**
     * The command that runs {@code mainClass} with {@code args} in a JVM like this one: the same {@code java}, native
     * access allowed, this JVM's AOT cache where it has one ({@link #aotOptions}), {@code jvmOptions}, this JVM's class
     * path.
     */
    public static List<String> command(List<String> jvmOptions, String mainClass, List<String> args) {
        String java = ProcessHandle.current()
                .info()
                .command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED"));
        cmd.addAll(aotOptions(ManagementFactory.getRuntimeMXBean().getInputArguments()));
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass));
        cmd.addAll(args);
        return cmd;
    }

    /**
     * Of a JVM's options {@code jvmArguments}, those of its AOT cache: {@code -XX:AOTCache} (which {@code ./viper}
     * passes once it trained one for the build) and the {@code -Xlog:aot} settings that keep the JVM's word on it off
     * standard output. A child on the same class path starts with the same cache; one that cannot use it (other heap
     * settings, say) runs without it.
     */
    static List<String> aotOptions(List<String> jvmArguments) {
        return jvmArguments.stream()
                .filter(a -> a.startsWith("-XX:AOTCache=") || a.startsWith("-Xlog:aot"))
                .toList();
    }

    /**
     * Starts {@code command}; its output lines are queued for {@link #awaitLine}.
     *
     * @param name what the child is, for messages ("benchmark consumer")
     * @param log the file for its standard error; empty: this JVM's standard error
     */
    public static ChildJvm start(String name, List<String> command, Optional<Path> log) throws IOException {
        return start(name, command, log, null);
    }

    /** Starts {@code command}; {@code onLine} takes each output line, on the reader thread. */
    public static ChildJvm start(String name, List<String> command, Optional<Path> log, Consumer<String> onLine)
            throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.redirectError(log.map(p -> ProcessBuilder.Redirect.to(p.toFile())).orElse(ProcessBuilder.Redirect.INHERIT));
        Process p = pb.start();
        LIVE.add(p);
        return new ChildJvm(name, p, log, onLine);
    }

    private void read(Consumer<String> onLine) {
        try (BufferedReader r =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = r.readLine(); line != null; line = r.readLine()) {
                onLine.accept(line);
            }
        } catch (IOException e) {
            // the process ended; whoever waits for it reports that
        } finally {
            lines.add(END);
            drained.countDown();
        }
    }

    /**
     * The next output line that starts with {@code prefix} (or is {@code prefix} without its trailing blank); the lines
     * before it are skipped.
     *
     * @throws ViperException with reason INTERNAL when the child ends first ({@link #exited}), TIMEOUT after
     *     {@code timeout}
     */
    public String awaitLine(String prefix, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            Object next = lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (next == null) {
                throw new ViperTimeoutException(
                        name + " printed no '" + prefix.strip() + "' within " + timeout.toSeconds() + " s" + logNote());
            }
            if (!(next instanceof String line)) {
                lines.add(END);
                throw exited("before printing '" + prefix.strip() + "'");
            }
            if (line.startsWith(prefix) || line.equals(prefix.strip())) {
                return line;
            }
        }
    }

    /** Whether the child still runs. */
    public boolean isAlive() {
        return process.isAlive();
    }

    /** Waits up to {@code timeout} for the reader to have handed over the child's last line. */
    public boolean awaitDrained(Duration timeout) throws InterruptedException {
        return drained.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /**
     * The error to report for a child that ended when it should not have: its exit status, the last telling line of its
     * log, and where the log is. Waits up to 1 s for the exit status.
     *
     * @param when what it had not done yet, or empty
     */
    public ViperException exited(String when) throws InterruptedException {
        String status = process.waitFor(1, TimeUnit.SECONDS) ? Integer.toString(process.exitValue()) : "unknown";
        return new ViperException(
                ViperException.Reason.INTERNAL,
                name + " exited with status " + status + (when.isEmpty() ? "" : " " + when)
                        + log.map(p -> ": " + lastLine(p)).orElse("") + logNote());
    }

    private String logNote() {
        return log.map(p -> " (log: " + p + ")").orElse("");
    }

    /** The log's last line that names an exception or the child's own failure, else its last line. */
    private static String lastLine(Path log) {
        try {
            List<String> all = Files.readAllLines(log, StandardCharsets.UTF_8);
            for (int i = all.size() - 1; i >= 0; i--) {
                String l = all.get(i).strip();
                if (l.startsWith("Demo") || l.startsWith("Exception") || l.contains("Exception:")) {
                    return l;
                }
            }
            return all.isEmpty() ? "no output" : all.getLast().strip();
        } catch (IOException e) {
            return "no log";
        }
    }

    /** Writes one command line; a child that has already exited is not an error here (waiting for it is). */
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

    /** Closes the child's standard input and waits up to {@code timeout} for it to exit, then ends it. */
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

    /** Kills the child at once (SIGKILL): what a crash or an operator's {@code kill -9} does. */
    public void kill() {
        process.destroyForcibly();
    }

    /** Ends the child if it still runs (forcibly after 5 s). */
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
