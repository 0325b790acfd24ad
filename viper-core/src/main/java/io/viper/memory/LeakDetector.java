package io.viper.memory;

import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Finds resources that were garbage-collected without {@code close()}, after Netty's {@code ResourceLeakDetector}: a
 * {@link io.viper.ModelLease} left open keeps its version's memory held for good (the consumer can never reuse that
 * buffer), and this names it. Each tracked resource has a phantom reference; when the collector finds the resource
 * unreachable while still open, a daemon thread ({@code viper-leak-detector}) logs an ERROR naming it (model and
 * version) and, at {@link Level#PARANOID}, the stack that acquired it. It releases nothing: tensors read from the
 * lease, or a device pointer, may still be in use, so freeing the memory under them would be unsafe.
 *
 * <p>The level is the system property {@value #LEVEL_PROPERTY}: {@code disabled}, {@code simple} (the default: every
 * lease tracked, no stack) or {@code paranoid} (every lease with the stack where it was taken; for tests, where the
 * parent pom sets it). Tests fail on a report through {@link #collectLeaks()}, which a JUnit extension calls after each
 * test class.
 *
 * <p>Thread-safe: any thread may track and close; reports come from the detector's thread or the thread calling
 * {@link #collectLeaks()}.
 */
public final class LeakDetector {
    /** The system property that sets the level, read once when the class loads. */
    public static final String LEVEL_PROPERTY = "viper.leakDetection.level";
    /** Reports kept for {@link #collectLeaks()} at most; later ones are counted and logged only. */
    static final int MAX_KEPT = 1000;

    private static final System.Logger LOG = System.getLogger(LeakDetector.class.getName());
    private static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<>();
    /** Open tracked resources: keeps their phantom references reachable until closed or reported. */
    private static final Set<Tracked> OPEN = ConcurrentHashMap.newKeySet();

    private static final Queue<String> UNCOLLECTED = new ConcurrentLinkedQueue<>();
    private static final AtomicInteger DROPPED = new AtomicInteger();
    /**
     * Held from taking a resource out of {@link #OPEN} to keeping its report, so that {@link #collectLeaks()} misses
     * none.
     */
    private static final Object REPORTING = new Object();

    private static volatile Level level = Level.parse(System.getProperty(LEVEL_PROPERTY));
    private static volatile boolean started;

    /** How closely resources are tracked. */
    public enum Level {
        /** Nothing is tracked. */
        DISABLED,
        /** Every resource is tracked; a report names it. */
        SIMPLE,
        /** Every resource is tracked with the stack that acquired it; a report shows the stack. */
        PARANOID;

        /** {@code value}, case-insensitive; null or blank: {@link #SIMPLE}; anything else is refused with a warning. */
        static Level parse(String value) {
            if (value == null || value.isBlank()) {
                return SIMPLE;
            }
            try {
                return valueOf(value.trim().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "{0}={1} is not disabled, simple or paranoid; using simple",
                        LEVEL_PROPERTY,
                        value);
                return SIMPLE;
            }
        }
    }

    /** The handle of one tracked resource, closed with it. */
    public interface Tracker {
        /** The resource was closed: it is no longer tracked. Idempotent. */
        void close();
    }

    private LeakDetector() {}

    public static Level level() {
        return level;
    }

    /** Sets the level for resources tracked from now on (tests; the system property sets it for a process). */
    public static void setLevel(Level newLevel) {
        level = Objects.requireNonNull(newLevel, "level");
    }

    /**
     * Tracks {@code resource} until {@link Tracker#close()}; null when the level is {@link Level#DISABLED}.
     * {@code what} names it in a report ("ModelLease on nt3 v4") and must not refer to the resource. The owner calls
     * {@link Tracker#close()} when the resource closes, and keeps the resource reachable until then
     * ({@link Reference#reachabilityFence}), or it may be reported while it closes.
     */
    public static Tracker track(Object resource, String what) {
        Level l = level;
        if (l == Level.DISABLED) {
            return null;
        }
        if (!started) {
            start();
        }
        Tracked t = new Tracked(resource, what, l == Level.PARANOID ? new Throwable("acquired here") : null);
        OPEN.add(t);
        return t;
    }

    /**
     * Collects garbage, reports what was collected while open, and returns the reports no earlier call returned (for
     * tests: a JUnit extension fails the test class with them). A leak found after this returns is returned by the next
     * call.
     */
    public static List<String> collectLeaks() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            // The sentinel is enqueued once the JVM's reference handler processed this collection.
            ReferenceQueue<Object> sentinelQueue = new ReferenceQueue<>();
            WeakReference<Object> sentinel = new WeakReference<>(new Object(), sentinelQueue);
            try {
                System.gc();
                sentinelQueue.remove(1000);
            } finally {
                Reference.reachabilityFence(sentinel);
            }
        }
        // The collector cleared what it found unreachable: report it here rather than wait for the
        // detector's thread, which may not have run yet.
        synchronized (REPORTING) {
            for (Tracked t : List.copyOf(OPEN)) {
                if (t.refersTo(null)) {
                    report(t);
                }
            }
        }
        List<String> out = new ArrayList<>();
        for (String r; (r = UNCOLLECTED.poll()) != null; ) {
            out.add(r);
        }
        int dropped = DROPPED.getAndSet(0);
        if (dropped > 0) {
            out.add(dropped + " more leak report(s), logged only");
        }
        return out;
    }

    /**
     * For tests: {@link #collectLeaks()}, and an {@link AssertionError} naming the first report when there is one
     * ({@code during} says what ran meanwhile: "ViperSdkTest").
     */
    public static void assertNoLeaks(String during) throws InterruptedException {
        List<String> leaks = collectLeaks();
        if (!leaks.isEmpty()) {
            throw new AssertionError(
                    leaks.size() + " leak(s) while " + during + " ran; the first:\n" + leaks.getFirst());
        }
    }

    private static synchronized void start() {
        if (started) {
            return;
        }
        Thread.ofPlatform().daemon().name("viper-leak-detector").start(() -> {
            while (true) {
                try {
                    report((Tracked) QUEUE.remove());
                } catch (InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "leak detector: " + e);
                }
            }
        });
        started = true;
    }

    /** {@code t}'s resource was collected: reports it if it was still open (once, whichever thread dequeued it). */
    private static void report(Tracked t) {
        synchronized (REPORTING) {
            if (OPEN.remove(t)) {
                keep(describe(t));
            }
        }
    }

    private static String describe(Tracked t) {
        StringBuilder b = new StringBuilder("LEAK: ")
                .append(t.what)
                .append(" was garbage-collected without close(); what it held stays held")
                .append(" (nothing is released under tensors that may still be read).");
        if (t.acquired == null) {
            b.append(" Run with -D").append(LEVEL_PROPERTY).append("=paranoid to see where it was acquired.");
        } else {
            b.append(" Acquired at:");
            StackTraceElement[] stack = t.acquired.getStackTrace();
            for (int i = 2; i < stack.length; i++) { // below track() and the resource's constructor
                b.append("\n\tat ").append(stack[i]);
            }
        }
        return b.toString();
    }

    private static void keep(String report) {
        LOG.log(System.Logger.Level.ERROR, report);
        if (UNCOLLECTED.size() < MAX_KEPT) {
            UNCOLLECTED.add(report);
        } else {
            DROPPED.incrementAndGet();
        }
    }

    private static final class Tracked extends PhantomReference<Object> implements Tracker {
        private final String what;
        private final Throwable acquired;

        Tracked(Object resource, String what, Throwable acquired) {
            super(resource, QUEUE);
            this.what = what;
            this.acquired = acquired;
        }

        @Override
        public void close() {
            if (OPEN.remove(this)) {
                clear();
            }
        }
    }
}
