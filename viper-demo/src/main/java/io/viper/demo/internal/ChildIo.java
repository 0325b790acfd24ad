package io.viper.demo.internal;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A demo process's side of {@link DemoEvents}: events out on standard output, the driver's commands in on standard
 * input. Also the shared clock: both processes turn the driver's start instant (wall-clock milliseconds, one host) into
 * their own {@link System#nanoTime()}.
 *
 * <p>{@link #emit} may be called from any thread; the command reads belong to the process's main thread.
 */
public final class ChildIo {
    private final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    private final PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    private final DemoEvents.Protocol<?, ?, ?> protocol;

    /** Speaks {@code protocol} (the producer's or the consumer's events). */
    public ChildIo(DemoEvents.Protocol<?, ?, ?> protocol) {
        this.protocol = protocol;
    }

    /** Writes one event as a line and flushes it. */
    public synchronized void emit(Object event) {
        out.println(protocol.encode(event));
        out.flush();
    }

    /**
     * Blocks for the driver's notifier command and returns its URI.
     *
     * @throws IOException when standard input closes first or the line is not a notifier command
     */
    public String awaitNotifier() throws IOException {
        return DemoEvents.parseNotifier(in.readLine());
    }

    /**
     * Blocks for the driver's start command and returns its instant as a {@link System#nanoTime()} value of this
     * process.
     *
     * @throws IOException when standard input closes first or the line is not a start command
     */
    public long awaitStart() throws IOException {
        long epochMs = DemoEvents.parseStart(in.readLine());
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(epochMs - System.currentTimeMillis());
    }

    /** Blocks until the driver says {@link DemoEvents#STOP} or closes standard input. */
    public void awaitStop() throws IOException {
        String line;
        while ((line = in.readLine()) != null) {
            if (line.strip().equals(DemoEvents.STOP)) {
                return;
            }
        }
    }

    /** Sleeps until {@link System#nanoTime()} reaches {@code deadline} (returns at once when it has). */
    public static void sleepUntil(long deadline) {
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            LockSupport.parkNanos(left);
        }
    }
}
