package io.viper.transfer.cuda.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.RetriableViperException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The chunk pipeline's scheduling with fake stages that sleep and record: overlap, order, buffer use, failures. */
class ChunkPipelineTest {

    /** Stages that sleep {@code ms[s]} per chunk and record what they saw. */
    private static final class Fake {
        final List<List<ChunkPipeline.Chunk>> seen = new ArrayList<>();
        final ConcurrentHashMap<Integer, Integer> bufferOwner = new ConcurrentHashMap<>();
        final AtomicInteger inFlight = new AtomicInteger();
        final AtomicInteger maxInFlight = new AtomicInteger();
        final List<String> violations = Collections.synchronizedList(new ArrayList<>());
        final List<ChunkPipeline.Stage> stages = new ArrayList<>();

        Fake(long... ms) {
            for (int s = 0; s < ms.length; s++) {
                int stage = s;
                List<ChunkPipeline.Chunk> mine = Collections.synchronizedList(new ArrayList<>());
                seen.add(mine);
                stages.add((c, b) -> {
                    if (stage == 0) {
                        maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                    }
                    Integer prev = bufferOwner.put(b, stage);
                    if (prev != null) {
                        violations.add("buffer " + b + " used by stage " + stage + " while stage " + prev + " had it");
                    }
                    Thread.sleep(ms[stage]);
                    bufferOwner.remove(b);
                    mine.add(c);
                    if (stage == ms.length - 1) {
                        inFlight.decrementAndGet();
                    }
                });
            }
        }
    }

    private static long timeMs(ChunkPipeline p, List<ChunkPipeline.Chunk> chunks) {
        long t0 = System.nanoTime();
        p.run(chunks);
        return (System.nanoTime() - t0) / 1_000_000;
    }

    @Test
    void threeEqualStagesOverlapToAboutChunksTimesOneStage() {
        Fake f = new Fake(20, 20, 20);
        List<ChunkPipeline.Chunk> chunks = ChunkPipeline.split(10L * 1000, 1000);
        long ms = timeMs(new ChunkPipeline("t", f.stages, 3), chunks);
        // Serial: 10 x 60 = 600 ms. Pipelined: (10 + 2) x 20 = 240 ms.
        assertTrue(ms >= 200, "cannot beat chunks x slowest stage: " + ms);
        assertTrue(ms < 420, "stages did not overlap: " + ms + " ms, serial would be 600");
        assertTrue(f.violations.isEmpty(), f.violations.toString());
        assertTrue(f.maxInFlight.get() <= 3, "more chunks in flight than buffers: " + f.maxInFlight.get());
    }

    @Test
    void timeFollowsTheSlowestStageNotTheSum() {
        Fake f = new Fake(20, 40, 20);
        long ms = timeMs(new ChunkPipeline("t", f.stages, 3), ChunkPipeline.split(10L, 1));
        long serial = timeMs(new ChunkPipeline("t", new Fake(20, 40, 20).stages, 1), ChunkPipeline.split(10L, 1));
        // Slowest x chunks = 400 ms (+ 40 ms fill/drain); the sum of the stages is 800 ms.
        assertTrue(ms >= 400, "cannot beat chunks x slowest stage: " + ms);
        assertTrue(serial >= 800, "one buffer runs the stages in sequence: " + serial);
        assertTrue(
                ms < 620 && ms < serial * 3 / 4,
                "time should approach 10 x 40 ms, not the 800 ms sum: " + ms + " (serial " + serial + ")");
        assertTrue(f.violations.isEmpty(), f.violations.toString());
    }

    @Test
    void oneBufferRunsTheStagesOneAfterTheOther() {
        Fake f = new Fake(10, 10, 10);
        long ms = timeMs(new ChunkPipeline("t", f.stages, 1), ChunkPipeline.split(6L, 1));
        assertTrue(ms >= 170, "one buffer cannot overlap: " + ms);
        assertEquals(1, f.maxInFlight.get());
    }

    @Test
    void everyStageSeesEveryChunkInOrderWithExactRanges() {
        Fake f = new Fake(0, 1, 0);
        List<ChunkPipeline.Chunk> chunks =
                ChunkPipeline.split(List.of(new long[] {100, 25}, new long[] {0, 10}, new long[] {500, 0}), 10);
        assertEquals(
                List.of(
                        new ChunkPipeline.Chunk(0, 100, 10),
                        new ChunkPipeline.Chunk(1, 110, 10),
                        new ChunkPipeline.Chunk(2, 120, 5),
                        new ChunkPipeline.Chunk(3, 0, 10)),
                chunks);
        new ChunkPipeline("t", f.stages, 2).run(chunks);
        for (List<ChunkPipeline.Chunk> s : f.seen) {
            assertEquals(chunks, s);
        }
        assertEquals(
                List.of(
                        new ChunkPipeline.Chunk(0, 0, 7),
                        new ChunkPipeline.Chunk(1, 7, 7),
                        new ChunkPipeline.Chunk(2, 14, 1)),
                ChunkPipeline.split(15, 7));
        assertEquals(List.of(), ChunkPipeline.split(0, 7));
    }

    @Test
    void firstFailureStopsThePipelineAndIsRethrown() {
        List<Integer> lastStage = Collections.synchronizedList(new ArrayList<>());
        ChunkPipeline p = new ChunkPipeline(
                "failing",
                List.of(
                        (c, b) -> {
                            if (c.index() == 3) {
                                throw new IOException("socket reset at chunk 3");
                            }
                        },
                        (c, b) -> lastStage.add(c.index())),
                2);
        RetriableViperException e =
                assertThrows(RetriableViperException.class, () -> p.run(ChunkPipeline.split(100, 1)));
        assertTrue(e.getMessage().contains("socket reset at chunk 3"), e.getMessage());
        assertTrue(lastStage.size() <= 3 && !lastStage.contains(3), "chunks after the failure went on: " + lastStage);
    }

    @Test
    void invalidShapesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new ChunkPipeline("t", List.of(), 2));
        assertThrows(IllegalArgumentException.class, () -> new ChunkPipeline("t", List.of((c, b) -> {}), 0));
        assertThrows(IllegalArgumentException.class, () -> ChunkPipeline.split(10, 0));
    }
}
