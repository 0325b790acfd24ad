package io.viper.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** The training thread and the pool's helpers run every piece of a copy once, and the copy ends only when all have. */
class CopyHelpersTest {
    private static final long MIB = 1L << 20;
    private static final ExecutorService POOL = Executors.newFixedThreadPool(2);

    @AfterAll
    static void stop() {
        POOL.shutdownNow();
    }

    @Test
    void everyPieceRunsExactlyOnce() {
        CopyHelpers helpers = new CopyHelpers(POOL, 2, 0, MIB);
        for (int pieces : new int[] {1, 2, 7, 200}) {
            AtomicIntegerArray runs = new AtomicIntegerArray(pieces);
            helpers.run(pieces, runs::incrementAndGet);
            for (int i = 0; i < pieces; i++) {
                assertEquals(1, runs.get(i), "piece " + i + " of " + pieces);
            }
        }
    }

    /** A helper takes a piece while the training thread holds another: the copy is shared, not handed over. */
    @Test
    void aHelperCopiesBesideTheTrainingThread() {
        Thread caller = Thread.currentThread();
        CountDownLatch helperStarted = new CountDownLatch(1);
        CountDownLatch callerStarted = new CountDownLatch(1);
        Set<Thread> threads = ConcurrentHashMap.newKeySet();
        new CopyHelpers(POOL, 1, 0, MIB).run(2, i -> {
            threads.add(Thread.currentThread());
            // Each side's piece waits (a bounded while) for the other's: two threads are at work at once.
            if (Thread.currentThread() == caller) {
                callerStarted.countDown();
                await(helperStarted);
            } else {
                helperStarted.countDown();
                await(callerStarted);
            }
        });
        assertEquals(2, threads.size(), "pieces ran on " + threads);
    }

    /** The training thread, done with its own piece, waits for the piece a helper is still copying. */
    @Test
    void runReturnsOnlyOnceTheHelpersPieceEnded() {
        Thread caller = Thread.currentThread();
        CountDownLatch helperStarted = new CountDownLatch(1);
        CountDownLatch callerPieceDone = new CountDownLatch(1);
        AtomicBoolean helperPieceEnded = new AtomicBoolean();
        new CopyHelpers(POOL, 1, 0, MIB).run(2, i -> {
            if (Thread.currentThread() == caller) {
                await(helperStarted);
                callerPieceDone.countDown();
            } else {
                helperStarted.countDown();
                await(callerPieceDone); // the caller has ended its piece and finds none left
                sleep(50);
                helperPieceEnded.set(true);
            }
        });
        assertTrue(helperPieceEnded.get(), "the helper's piece had ended when run returned");
    }

    /** The callback after a piece runs on the training thread only, once per piece of its own, never on a helper. */
    @Test
    void theCallbackAfterEachPieceRunsOnTheTrainingThreadOnly() {
        Thread caller = Thread.currentThread();
        for (int round = 0; round < 20; round++) {
            AtomicInteger own = new AtomicInteger();
            AtomicInteger after = new AtomicInteger();
            AtomicBoolean offCaller = new AtomicBoolean();
            new CopyHelpers(POOL, 2, 0, MIB)
                    .run(
                            50,
                            i -> {
                                if (Thread.currentThread() == caller) {
                                    own.incrementAndGet();
                                }
                            },
                            () -> {
                                offCaller.compareAndSet(false, Thread.currentThread() != caller);
                                after.incrementAndGet();
                            });
            assertFalse(offCaller.get());
            assertEquals(own.get(), after.get());
        }
    }

    @Test
    void aFailedPieceIsRethrownAndThePiecesNotBegunAreSkipped() {
        // No helpers: the training thread takes the pieces in order, so which ones ran is known.
        AtomicIntegerArray runs = new AtomicIntegerArray(10);
        IllegalStateException failure = new IllegalStateException("piece 3 failed");
        CopyHelpers alone = new CopyHelpers(POOL, 0, 0, MIB);
        IllegalStateException thrown = assertThrows(
                IllegalStateException.class,
                () -> alone.run(10, i -> {
                    runs.incrementAndGet(i);
                    if (i == 3) {
                        throw failure;
                    }
                }));
        assertSame(failure, thrown);
        for (int i = 0; i < 10; i++) {
            assertEquals(i <= 3 ? 1 : 0, runs.get(i), "piece " + i);
        }
        // With helpers, a failure on a helper's thread reaches the training thread as well.
        Thread caller = Thread.currentThread();
        IllegalStateException onHelper = new IllegalStateException("a helper's piece failed");
        CopyHelpers shared = new CopyHelpers(POOL, 1, 0, MIB);
        for (int round = 0; round < 20; round++) {
            RuntimeException e = assertThrows(
                    RuntimeException.class,
                    () -> shared.run(4, i -> {
                        if (Thread.currentThread() != caller || i == 3) {
                            throw onHelper;
                        }
                    }));
            assertSame(onHelper, e);
        }
    }

    @Test
    void aClosedPoolLeavesTheCopyToTheTrainingThread() {
        ExecutorService closed = Executors.newSingleThreadExecutor();
        closed.shutdown();
        AtomicIntegerArray runs = new AtomicIntegerArray(5);
        new CopyHelpers(closed, 3, 0, MIB).run(5, runs::incrementAndGet);
        for (int i = 0; i < 5; i++) {
            assertEquals(1, runs.get(i));
        }
    }

    @Test
    void onlyLargeCopiesOfMemoryOtherThreadsMayReadAreShared() {
        // Each source is its own memory; null stands for a source without any (a heap array).
        Function<MemorySegment, MemorySegment> memory = s -> s;
        try (Arena shared = Arena.ofShared();
                Arena confined = Arena.ofConfined()) {
            List<MemorySegment> sharedTensors = List.of(shared.allocate(4 * MIB));
            List<MemorySegment> heapTensors = Collections.singletonList(null);
            List<MemorySegment> withConfined = List.of(shared.allocate(MIB), confined.allocate(MIB));
            CopyHelpers helpers = new CopyHelpers(POOL, 1, 2 * MIB, MIB);
            assertTrue(helpers.shares(4 * MIB, sharedTensors, memory));
            assertTrue(helpers.shares(4 * MIB, heapTensors, memory));
            assertFalse(helpers.shares(MIB, sharedTensors, memory), "smaller than the least shared copy");
            assertFalse(
                    helpers.shares(4 * MIB, withConfined, memory),
                    "a confined arena's memory is read by its owner only");
            assertFalse(CopyHelpers.NONE.shares(1L << 40, sharedTensors, memory), "no helpers");
            assertFalse(new CopyHelpers(POOL, 1).shares(CopyHelpers.MIN_BYTES - 1, sharedTensors, memory));
            assertTrue(new CopyHelpers(POOL, 1).shares(CopyHelpers.MIN_BYTES, sharedTensors, memory));
        }
    }

    @Test
    void piecesMustNotSplitACompareUnit() {
        assertThrows(IllegalArgumentException.class, () -> new CopyHelpers(POOL, 1, 0, MIB + 4096));
        assertThrows(IllegalArgumentException.class, () -> new CopyHelpers(POOL, -1));
    }

    private static void await(CountDownLatch latch) {
        try {
            assertTrue(latch.await(10, TimeUnit.SECONDS), "the other piece started");
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
