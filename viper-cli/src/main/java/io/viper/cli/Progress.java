package io.viper.cli;

import java.io.PrintWriter;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A live status line on stderr for the long commands (publish, consume, export, the benches): the stage, the bytes done
 * of the total, the rate and the time the stage has taken, rewritten in place a few times a second. Only on a terminal
 * ({@code ./viper} sets {@code VIPER_STDERR_TTY} when stderr is one) and without {@code --json}; otherwise every method
 * does nothing, so that output read by a program is exactly what it was.
 *
 * <p>Thread-safe: the command's thread sets the stage and counts bytes, a daemon thread redraws; {@link #close()}
 * clears the line.
 */
final class Progress implements AutoCloseable {
    private static final long REDRAW_MS = 200;

    private final PrintWriter err;
    private final boolean enabled;
    private final AtomicLong done = new AtomicLong();
    private final ScheduledExecutorService redraw;
    private volatile String stage = "";
    private volatile long total = -1;
    private volatile LongSupplier counter;
    private volatile long stageStart = System.nanoTime();
    private int drawn; // characters of the line on screen; redraw thread and close, under this
    private boolean closed; // likewise

    /**
     * @param terminal whether stderr is a terminal (see {@link #onTerminal()})
     * @param json whether the command prints JSON, which stays alone on the streams
     */
    Progress(PrintWriter err, boolean terminal, boolean json) {
        this.err = err;
        this.enabled = terminal && !json;
        if (enabled) {
            redraw = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "viper-progress");
                t.setDaemon(true);
                return t;
            });
            redraw.scheduleAtFixedRate(this::draw, REDRAW_MS, REDRAW_MS, TimeUnit.MILLISECONDS);
        } else {
            redraw = null;
        }
    }

    /** Whether stderr is a terminal, as the {@code ./viper} wrapper found ({@code [ -t 2 ]}). */
    static boolean onTerminal() {
        return System.getenv("VIPER_STDERR_TTY") != null;
    }

    boolean enabled() {
        return enabled;
    }

    /** A new stage of {@code totalBytes} bytes (-1: unknown), its bytes counted with {@link #add}. */
    void stage(String name, long totalBytes) {
        stage(name, totalBytes, null);
    }

    /** A new stage whose bytes done so far {@code bytesDone} reports (null: counted with {@link #add}). */
    void stage(String name, long totalBytes, LongSupplier bytesDone) {
        done.set(0);
        counter = bytesDone;
        total = totalBytes;
        stageStart = System.nanoTime();
        stage = name;
    }

    /** Counts {@code bytes} more done in the current stage. */
    void add(long bytes) {
        done.addAndGet(bytes);
    }

    /** The status line as it would be drawn now. */
    String line() {
        return line(stage, bytesDone(), total, (System.nanoTime() - stageStart) / 1e9);
    }

    private long bytesDone() {
        LongSupplier c = counter;
        return c != null ? c.getAsLong() : done.get();
    }

    /** {@code stage: done / total (pct), rate, seconds}, the parts that are known. */
    static String line(String stage, long done, long total, double seconds) {
        StringBuilder sb = new StringBuilder(stage);
        if (done > 0 || total > 0) {
            sb.append(": ").append(bytes(done));
            if (total > 0) {
                sb.append(" / ").append(bytes(total));
                sb.append(String.format(Locale.ROOT, " (%d%%)", Math.min(100, done * 100 / total)));
            }
            if (seconds > 0 && done > 0) {
                sb.append(", ").append(bytes((long) (done / seconds))).append("/s");
            }
        }
        return sb.append(String.format(Locale.ROOT, ", %.1f s", seconds)).toString();
    }

    /** {@code n} bytes in binary units with one decimal: 512 B, 1.5 KiB, 3.0 GiB. */
    static String bytes(long n) {
        if (n < 1024) {
            return n + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB", "PiB"};
        double v = n;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
    }

    private synchronized void draw() {
        if (closed || stage.isEmpty()) {
            return;
        }
        String l = line();
        // \r and spaces over what is left of a longer line: no cursor control a plain terminal might not know.
        err.print("\r" + l + " ".repeat(Math.max(0, drawn - l.length())));
        err.flush();
        drawn = l.length();
    }

    /** Clears the line for a line the command prints (the next redraw brings it back under that). */
    synchronized void clear() {
        if (drawn > 0) {
            err.print("\r" + " ".repeat(drawn) + "\r");
            err.flush();
            drawn = 0;
        }
    }

    /** Stops redrawing and clears the line, so that what the command prints next starts on a clean one. */
    @Override
    public synchronized void close() {
        if (redraw == null || closed) {
            return;
        }
        closed = true;
        redraw.shutdownNow();
        clear();
    }
}
