package io.viper.transfer.cuda.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Moves a transfer through a fixed sequence of stages chunk by chunk, with the stages overlapped: while stage 2 works
 * on chunk {@code c}, stage 1 already works on chunk {@code c + 1}. Used for the cross-node GPU path (device to pinned
 * host, network, pinned host to device), where the total time then approaches {@code chunks x slowest stage} instead of
 * the sum of all stages.
 *
 * <p>Scheduling: one thread per stage; every stage sees the chunks in order; a chunk holds one of {@code buffers} chunk
 * buffers from the moment the first stage starts it until the last stage finished it, so at most {@code buffers} chunks
 * are in flight (2: double buffering, 3: triple). A buffer is never used by two stages at once. The first failure stops
 * every stage and is rethrown by {@link #run} (a {@link ViperException} as it is, anything else wrapped as a retriable
 * {@code TRANSFER} failure). Instances are immutable; {@link #run} may be called from any thread.
 */
public final class ChunkPipeline {

    /** One piece of a transfer: {@code length} bytes at {@code offset} of the whole stream. */
    public record Chunk(int index, long offset, long length) {}

    /** One step a chunk goes through, working in chunk buffer {@code buffer} (0 .. buffers-1). */
    @FunctionalInterface
    public interface Stage {
        void process(Chunk chunk, int buffer) throws Exception;
    }

    private static final Item END = new Item(null, -1);

    private record Item(Chunk chunk, int buffer) {}

    private final String name;
    private final List<Stage> stages;
    private final int buffers;

    /**
     * @param name for thread names and errors
     * @param stages at least one, in order
     * @param buffers chunk buffers, at least 1 (1 runs the stages one after the other)
     */
    public ChunkPipeline(String name, List<Stage> stages, int buffers) {
        if (stages.isEmpty()) {
            throw new IllegalArgumentException("a pipeline needs at least one stage");
        }
        if (buffers < 1) {
            throw new IllegalArgumentException("a pipeline needs at least one chunk buffer, got " + buffers);
        }
        this.name = name;
        this.stages = List.copyOf(stages);
        this.buffers = buffers;
    }

    /** Splits {@code total} bytes into chunks of {@code chunkSize} (the last one shorter), offsets from 0. */
    public static List<Chunk> split(long total, long chunkSize) {
        return split(List.of(new long[] {0, total}), chunkSize);
    }

    /** Splits {@code (offset, length)} ranges into chunks of at most {@code chunkSize}, in range order. */
    public static List<Chunk> split(List<long[]> ranges, long chunkSize) {
        if (chunkSize < 1) {
            throw new IllegalArgumentException("chunk size must be positive, got " + chunkSize);
        }
        List<Chunk> out = new ArrayList<>();
        for (long[] r : ranges) {
            for (long done = 0; done < r[1]; done += chunkSize) {
                out.add(new Chunk(out.size(), r[0] + done, Math.min(chunkSize, r[1] - done)));
            }
        }
        return out;
    }

    /** Runs every chunk through every stage; returns when the last stage finished the last chunk. */
    public void run(List<Chunk> chunks) {
        int n = stages.size();
        List<BlockingQueue<Item>> queues = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            queues.add(new ArrayBlockingQueue<>(buffers + 1));
        }
        BlockingQueue<Integer> free = new ArrayBlockingQueue<>(buffers);
        for (int b = 0; b < buffers; b++) {
            free.add(b);
        }
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int s = 0; s < n; s++) {
            int stage = s;
            threads.add(Thread.ofPlatform().daemon().name(name + "-stage-" + s).unstarted(() -> {
                try {
                    if (stage == 0) {
                        for (Chunk c : chunks) {
                            int b = free.take();
                            stages.get(0).process(c, b);
                            forward(queues, stage, new Item(c, b), free);
                        }
                        forward(queues, stage, END, free);
                    } else {
                        while (true) {
                            Item it = queues.get(stage).take();
                            if (it == END) {
                                forward(queues, stage, END, free);
                                return;
                            }
                            stages.get(stage).process(it.chunk, it.buffer);
                            forward(queues, stage, it, free);
                        }
                    }
                } catch (InterruptedException e) {
                    failure.compareAndSet(null, e);
                } catch (Throwable t) {
                    if (failure.compareAndSet(null, t)) {
                        threads.forEach(Thread::interrupt);
                    }
                }
            }));
        }
        threads.forEach(Thread::start);
        boolean interrupted = false;
        for (Thread t : threads) {
            while (true) {
                try {
                    t.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                    failure.compareAndSet(null, e);
                    threads.forEach(Thread::interrupt);
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        Throwable f = failure.get();
        if (f != null) {
            if (f instanceof ViperException ve) {
                throw ve;
            }
            if (f instanceof InterruptedException) {
                throw new ViperException(ViperException.Reason.INTERNAL, name + ": interrupted");
            }
            throw new RetriableViperException(ViperException.Reason.TRANSFER, name + ": " + f, f);
        }
    }

    private void forward(List<BlockingQueue<Item>> queues, int stage, Item it, BlockingQueue<Integer> free)
            throws InterruptedException {
        if (stage + 1 < queues.size()) {
            queues.get(stage + 1).put(it);
        } else if (it != END) {
            free.put(it.buffer);
        }
    }
}
