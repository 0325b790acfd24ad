package io.viper.testing.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class when Netty reports a leaked buffer (or any other tracked resource) while it ran. Not used by hand:
 * a module whose tests run Netty has viper-core's test jar as a test dependency, and that jar's
 * {@code META-INF/services/org.junit.jupiter.api.extension.Extension} registers the extension for every test class,
 * because the parent pom switches on JUnit's extension autodetection for surefire and failsafe.
 *
 * <p>Loading the class turns Netty's leak detector to PARANOID (every buffer tracked) and installs a detector factory
 * whose detectors record each report instead of logging it (a test JVM may have no logging backend); the failure
 * message carries the report. JUnit loads autodetected extensions before any test class runs, so the factory is in
 * place before Netty creates its buffer detector. After each test class (and its {@code @AfterAll} methods) the
 * extension collects garbage, lets the detector look for unreleased buffers, and fails the class with the first report.
 * Each report fails one class only: the first to finish after it was made.
 *
 * <p>Where Netty's buffers are not on the test class path the extension does nothing, and touches no Netty class (they
 * live in {@link Recorder}, loaded only when Netty is there): it is registered for every module that has the test
 * support, whether or not its tests run Netty. Nor does it collect garbage in a JVM that never made a Netty resource:
 * nothing can have leaked there.
 *
 * <p>Threads: the detectors record from whatever thread allocates; the list is thread-safe.
 */
public final class NettyLeakDetection implements AfterAllCallback {
    /** Whether Netty's buffers (and so its leak detector) are on the class path. */
    private static final boolean NETTY = present("io.netty.buffer.UnpooledByteBufAllocator");

    static {
        if (NETTY) {
            Recorder.install();
        }
    }

    /** Created by JUnit's extension autodetection. */
    public NettyLeakDetection() {}

    private static boolean present(String className) {
        try {
            Class.forName(className, false, NettyLeakDetection.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    @Override
    public void afterAll(ExtensionContext context) throws InterruptedException {
        if (!NETTY) {
            return;
        }
        List<String> leaks = Recorder.unblamedReports();
        if (!leaks.isEmpty()) {
            throw new AssertionError("Netty reported " + leaks.size() + " leak(s) while " + context.getDisplayName()
                    + " ran (a buffer was garbage-collected without release()); the first:\n" + leaks.getFirst());
        }
    }

    /** Netty's side: the recording detectors and what they reported. Loaded only where Netty is on the class path. */
    private static final class Recorder {
        private static final List<String> REPORTS = new CopyOnWriteArrayList<>();
        /** Whether Netty asked for a detector: until then it tracked nothing, so nothing can leak. */
        private static volatile boolean tracking;
        /** How many of {@link #REPORTS} have already failed a test class. */
        private static int blamed;

        static void install() {
            ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
            ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new RecordingFactory());
        }

        /**
         * Collects garbage and lets Netty's detector report what it finds, then returns the reports no class was failed
         * for yet.
         */
        static synchronized List<String> unblamedReports() throws InterruptedException {
            if (!tracking) {
                return List.of();
            }
            for (int i = 0; i < 3; i++) {
                // The sentinel is enqueued once the JVM's reference handler has processed this collection.
                ReferenceQueue<Object> queue = new ReferenceQueue<>();
                WeakReference<Object> sentinel = new WeakReference<>(new Object(), queue);
                try {
                    System.gc();
                    queue.remove(1000);
                } finally {
                    Reference.reachabilityFence(sentinel);
                }
                // The detector looks for collected, unreleased buffers when it tracks a new one
                // (heap buffers are not tracked).
                ByteBuf probe = UnpooledByteBufAllocator.DEFAULT.directBuffer(1);
                probe.release();
            }
            List<String> fresh = List.copyOf(REPORTS.subList(blamed, REPORTS.size()));
            blamed += fresh.size();
            return fresh;
        }

        private static final class RecordingFactory extends ResourceLeakDetectorFactory {
            @Override
            @SuppressWarnings("deprecation") // the abstract method Netty still calls
            public <T> ResourceLeakDetector<T> newResourceLeakDetector(
                    Class<T> resource, int samplingInterval, long maxActive) {
                tracking = true;
                return new RecordingDetector<>(resource, samplingInterval);
            }
        }

        private static final class RecordingDetector<T> extends ResourceLeakDetector<T> {
            RecordingDetector(Class<T> resource, int samplingInterval) {
                super(resource, samplingInterval);
            }

            @Override
            protected boolean needReport() {
                return true; // Netty asks its logger; a test JVM without a logging backend would drop the report
            }

            @Override
            protected void reportTracedLeak(String resourceType, String records) {
                REPORTS.add("LEAK: " + resourceType + ".release() was not called before it was garbage-collected."
                        + records);
            }

            @Override
            protected void reportUntracedLeak(String resourceType) {
                REPORTS.add("LEAK: " + resourceType + ".release() was not called before it was garbage-collected.");
            }
        }
    }
}
