package io.viper.notify.kafka;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A {@link KafkaNotifierChild} in its own JVM (same java binary and class path as the test), with its stdout lines
 * collected and its stderr kept in a file for failure messages.
 */
final class ChildJvm implements AutoCloseable {
    private final Process process;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final List<String> all = new ArrayList<>();
    private final Path stderr;

    ChildJvm(String... args) throws IOException {
        String java = ProcessHandle.current()
                .info()
                .command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> cmd = new ArrayList<>(List.of(
                java,
                "-Xmx128m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                KafkaNotifierChild.class.getName()));
        cmd.addAll(List.of(args));
        stderr = Files.createTempFile("viper-kafka-child-", ".err");
        process = new ProcessBuilder(cmd).redirectError(stderr.toFile()).start();
        Thread reader = Thread.ofPlatform()
                .daemon(true)
                .name("child-" + process.pid())
                .start(() -> {
                    try (BufferedReader r = new BufferedReader(
                            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                        String line;
                        while ((line = r.readLine()) != null) {
                            synchronized (all) {
                                all.add(line);
                            }
                            lines.add(line);
                        }
                    } catch (IOException e) {
                        lines.add("EOF " + e);
                    }
                });
        reader.setUncaughtExceptionHandler((t, e) -> lines.add("EOF " + e));
    }

    /** The next stdout line starting with {@code prefix}, skipping others; fails after {@code seconds}. */
    String await(String prefix, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            long left = deadline - System.nanoTime();
            String line = left <= 0 ? null : lines.poll(left, TimeUnit.NANOSECONDS);
            if (line == null) {
                throw new AssertionError("child " + process.pid() + " printed no '" + prefix + "' line within "
                        + seconds + " s; its output: " + output() + "; stderr tail: " + stderrTail());
            }
            if (line.startsWith(prefix)) {
                return line;
            }
        }
    }

    /** Every stdout line so far. */
    List<String> output() {
        synchronized (all) {
            return List.copyOf(all);
        }
    }

    /** The stdout lines so far that start with {@code prefix}. */
    List<String> output(String prefix) {
        return output().stream().filter(l -> l.startsWith(prefix)).toList();
    }

    /** Waits for the process to end; returns its exit code. */
    int waitFor(long seconds) throws InterruptedException {
        if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
            throw new AssertionError(
                    "child " + process.pid() + " did not exit within " + seconds + " s; stderr tail: " + stderrTail());
        }
        return process.exitValue();
    }

    /** The last lines of the child's stderr. */
    String stderrTail() {
        try {
            List<String> l = Files.readAllLines(stderr);
            return String.join("\n", l.subList(Math.max(0, l.size() - 30), l.size()));
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    /** Closes stdin (a consumer child then exits), waits briefly, and kills it if it is still there. */
    @Override
    public void close() throws IOException {
        try {
            process.getOutputStream().close();
        } catch (IOException e) {
            // already gone
        }
        try {
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        Files.deleteIfExists(stderr);
    }
}
