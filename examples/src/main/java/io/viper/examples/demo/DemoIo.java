package io.viper.examples.demo;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * How the demo's processes talk to the driver: one JSON object per line on standard output
 * ({@code {"event":"ready",...}}, {@code "progress"}, {@code "result"}), commands one per line on
 * standard input ({@code start EPOCH_MS}, {@code stop}). Also the shared clock: both processes turn
 * the driver's start instant (wall-clock milliseconds, one host) into their own {@link System#nanoTime()}.
 */
final class DemoIo {
    private final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    private final PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    /** Writes one line and flushes it. */
    synchronized void emit(String jsonObject) {
        out.println(jsonObject);
        out.flush();
    }

    /**
     * Blocks for the driver's {@code start EPOCH_MS} line and returns that instant as a
     * {@link System#nanoTime()} value of this process.
     *
     * @throws IOException when standard input closes first or the line is not a start command
     */
    long awaitStart() throws IOException {
        String line = in.readLine();
        if (line == null || !line.startsWith("start ")) {
            throw new IOException("expected 'start EPOCH_MS' on standard input, got " + line);
        }
        long epochMs = Long.parseLong(line.substring(6).strip());
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(epochMs - System.currentTimeMillis());
    }

    /** Blocks until the driver says {@code stop} or closes standard input. */
    void awaitStop() throws IOException {
        String line;
        while ((line = in.readLine()) != null) {
            if (line.strip().equals("stop")) {
                return;
            }
        }
    }

    /** Sleeps until {@link System#nanoTime()} reaches {@code deadline} (returns at once when it has). */
    static void sleepUntil(long deadline) {
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            LockSupport.parkNanos(left);
        }
    }

    /** A JSON number; NaN and infinities become null. */
    static String num(double v) {
        return Double.isFinite(v) ? String.format(Locale.ROOT, "%.6g", v) : "null";
    }

    /** A JSON string (the values here are URIs and scheme names: quotes and backslashes escaped). */
    static String str(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
