package io.viper.cli.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The other bound of a cold load, beside the disk: the first touch of the memory a loaded model occupies. A consumer
 * that loads into a receive buffer of its own allocates it (the JVM zeroes it, touching every page once), and a mapped
 * load fills page-cache pages; in a virtual machine whose host backs guest memory on first touch, this costs about as
 * much as a fast disk's read of the same bytes, and several processes touching fresh memory at once do not go faster
 * together. Measured as {@code n} threads each allocating {@code bytes} zeroed bytes off-heap at once, the seconds
 * until the last is done; the memory is freed after. Static; one call at a time.
 */
final class MemoryBound {
    private MemoryBound() {}

    /** Seconds until {@code n} allocations of {@code bytes} zeroed bytes each, made at once, are all done. */
    static double touchS(long bytes, int n) throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(n);
        List<Arena> arenas = new ArrayList<>();
        try {
            List<Future<Long>> done = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                Arena arena = Arena.ofShared();
                arenas.add(arena);
                done.add(threads.submit(() -> {
                    MemorySegment fresh = arena.allocate(bytes, 4096); // zeroed: every page touched once
                    fresh.set(ValueLayout.JAVA_BYTE, bytes - 1, (byte) 1);
                    return System.nanoTime();
                }));
            }
            return PfsBench.secondsUntilLast(t0, done);
        } finally {
            threads.shutdown();
            threads.awaitTermination(1, TimeUnit.MINUTES); // no allocation may still run when its arena closes
            arenas.forEach(Arena::close);
        }
    }
}
