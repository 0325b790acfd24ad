package io.viper.cli.bench;

import com.sun.management.OperatingSystemMXBean;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.CheckpointPolicy;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.ViperProducer;
import io.viper.tensor.DType;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The measurement behind {@code viper bench pfs}: a producer flushes a model of {@code size} bytes to a fresh PFS
 * repository (from publish to durable; the third version, every byte changed, so that both staging buffers a training
 * job allocates once are there, as they are in a run), then, with the page cache dropped, one consumer and then
 * {@code consumers} at once load it cold from there (late joiners: the repository is their only source); in the same
 * run the same bytes are written and read with plain sequential direct I/O ({@link DeviceBound}) on the same file
 * system, and with fio where it is installed, the kernel's own fill of its page cache with the same bytes
 * ({@link PageCacheFill}), and the first touch of the memory the loads need ({@link MemoryBound}): the floor of a cold
 * load is the slowest of the three. Between the cold loads, one more load with the page cache holding the version
 * measures the processor time a consumer's own work takes (mapping, its page tables, verifying), which each of the
 * consumers at once does again: on a machine with few cores that, not the disk, can bind them. One thread (the
 * consumers' loads on threads of their own); not reusable.
 *
 * @param size the model's bytes
 * @param blockBytes the producer's {@code viper.block.bytes} (0: a safetensors file)
 * @param consumers how many consumers load at once in the last step (0: skipped)
 * @param dir an empty directory on the file system to measure
 * @param dropCache whether to drop the page cache before each cold read (false: the reads are warm)
 */
public record PfsBench(long size, long blockBytes, int consumers, Path dir, boolean dropCache) {
    private static final String MODEL = "bench";
    private static final Duration LOAD_TIMEOUT = Duration.ofMinutes(10);

    /**
     * What one run measured, in seconds (NaN where not measured).
     *
     * @param flushS publish called to durable on the PFS
     * @param coldLoadS one consumer joining late, until the version is loaded and verified
     * @param concurrentLoadS {@code consumers} joining at once, until the last has it
     * @param cacheDropped whether the page cache could be dropped before each cold read (it needs root)
     * @param bound the device, measured in the same run
     * @param touchS the first touch of {@code size} fresh bytes ({@link MemoryBound}), in the same run
     * @param touchAtOnceS {@code consumers} such touches at once, until the last is done (NaN when not measured)
     * @param warmLoadCpuS the processor time of this process (every thread, user and system) during one load with the
     *     page cache holding the version: one consumer's own work, which no sharing of the disk or the page cache saves
     *     (NaN when not measured)
     * @param cores the processors this process may use
     */
    public record Result(
            long size,
            long blockBytes,
            int consumers,
            double flushS,
            double coldLoadS,
            double concurrentLoadS,
            boolean cacheDropped,
            DeviceBound.Figures bound,
            double touchS,
            double touchAtOnceS,
            double warmLoadCpuS,
            int cores) {

        /**
         * The floor of one cold load here: the disk's direct read of the bytes, the kernel's fill of its page cache
         * with them, or the first touch of the memory they land in, whichever is slowest (a loader can overlap the disk
         * and the memory, not skip either; a load that shares the page cache, as a mapped one does, waits for the
         * kernel to fill it).
         */
        public double coldFloorS() {
            return Math.max(Math.max(bound.readS(), bound.fillS()), touchS);
        }

        /**
         * The floor of {@code consumers} cold loads at once: the bytes read from the disk once and held in memory once,
         * both shared by the consumers (the page cache's copy, mapped by each), as one load's floor. Loads into private
         * buffers need {@link #touchAtOnceS} instead, which on a virtual machine can be several times it.
         */
        public double concurrentFloorS() {
            return Double.isNaN(concurrentLoadS) ? Double.NaN : coldFloorS();
        }

        /**
         * The processor time {@code consumers} loads at once need at the least, as seconds of this machine's cores:
         * each consumer's own work ({@link #warmLoadCpuS}) once per consumer, spread over every core. Where it exceeds
         * the disk's floor, the loads at once are bound by the processors, and their time against one load's grows with
         * the consumers per core, whatever the disk does.
         */
        public double concurrentCpuS() {
            return Double.isNaN(concurrentLoadS) ? Double.NaN : consumers * warmLoadCpuS / cores;
        }
    }

    public Result run() throws Exception {
        Files.createDirectories(dir);
        Path repo = Files.createDirectory(dir.resolve("repo"));
        boolean dropped = true;
        double flush;
        double cold;
        double concurrent = Double.NaN;
        String notifier = "embedded://127.0.0.1:" + freePort();
        DeviceBound.Figures bound;
        double touch;
        double touchAtOnce = Double.NaN;
        double warmCpu = Double.NaN;
        try (Viper viper = Viper.builder()
                .notifier(notifier)
                .pfsRoot(repo)
                .config("viper.transports", "")
                .config("viper.block.bytes", Long.toString(blockBytes))
                .config("viper.producer.staging.budget.bytes", Long.toString(2 * size + (4 << 20)))
                // no transport serves the versions: the newest is the only one kept, and two buffers take turns
                .config("viper.producer.staging.versions", "1")
                // every version through the block store, though it shares no block with the one before: by default
                // such a version is kept as one file (viper.producer.block.skip.unshared), the row without blocks
                .config("viper.producer.block.skip.unshared", "false")
                .build()) {
            // the model and the producer's staging go before the loads: their memory is the page cache's then
            try (Arena arena = Arena.ofShared()) {
                MemorySegment model = arena.allocate(size, 4096);
                fill(model, 42);
                try (ViperProducer producer = viper.producer(MODEL, CheckpointPolicy.never())) {
                    // two versions, not measured: they allocate the two staging buffers a training job reuses after
                    publish(producer, model);
                    fill(model, 43);
                    publish(producer, model);
                    fill(model, 44); // every byte (every block) changed
                    long t0 = System.nanoTime();
                    publish(producer, model);
                    flush = seconds(t0);
                }
                bound = new DeviceBound(dir.resolve("direct.bin"), model, dropCache).run();
                dropped &= bound.cacheDropped();
            }
            // after the model's memory is freed, as the consumers' loads below run
            touch = MemoryBound.touchS(size, 1);
            if (consumers > 0) {
                touchAtOnce = MemoryBound.touchS(size, consumers);
            }
            dropped &= drop();
            cold = loadAtOnce(notifier, repo, 1);
            if (consumers > 0) {
                long cpu0 = processCpuNanos();
                loadAtOnce(notifier, repo, 1); // the page cache holds what the cold load read
                warmCpu = (processCpuNanos() - cpu0) / 1e9;
                dropped &= drop();
                concurrent = loadAtOnce(notifier, repo, consumers);
            }
        }
        return new Result(
                size,
                blockBytes,
                consumers,
                flush,
                cold,
                concurrent,
                dropped,
                bound,
                touch,
                touchAtOnce,
                warmCpu,
                Runtime.getRuntime().availableProcessors());
    }

    /** {@code n} consumers join at once, each in its own Viper instance; seconds until the last has version 1. */
    private static double loadAtOnce(String notifier, Path repo, int n) throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(n);
        try {
            long t0 = System.nanoTime();
            List<Future<Long>> loaded = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                loaded.add(threads.submit(() -> {
                    try (Viper viper = Viper.builder()
                                    .notifier(notifier)
                                    .pfsRoot(repo)
                                    .consumerPaths("file")
                                    // each its own meters: consumers of one model in one process share no gauge
                                    .meterRegistry(new SimpleMeterRegistry())
                                    .config("viper.consumer.host.budget.bytes", "64g")
                                    .build();
                            ViperConsumer consumer = viper.consumer(MODEL)) {
                        consumer.awaitVersion(2, LOAD_TIMEOUT);
                        return System.nanoTime(); // before the close, which is not part of the load
                    }
                }));
            }
            return secondsUntilLast(t0, loaded);
        } finally {
            threads.shutdownNow();
        }
    }

    /** Seconds from {@code t0} until the last of {@code done} (each its {@link System#nanoTime()} when done). */
    static double secondsUntilLast(long t0, List<Future<Long>> done) throws Exception {
        long last = t0;
        for (Future<Long> f : done) {
            last = Math.max(last, f.get());
        }
        return (last - t0) / 1e9;
    }

    private void publish(ViperProducer producer, MemorySegment model) throws Exception {
        producer.publish(sink -> sink.add("weights", DType.U8, new long[] {size}, model), Map.of())
                .durable()
                .get(10, TimeUnit.MINUTES);
    }

    private static void fill(MemorySegment model, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        for (long i = 0; i + 8 <= model.byteSize(); i += 8) {
            model.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
        }
    }

    /** This process's processor time so far, every thread, user and system, in nanoseconds. */
    private static long processCpuNanos() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        throw new IllegalStateException("this JVM does not report its process's processor time");
    }

    private boolean drop() {
        return dropCache && PageCache.drop();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /**
     * Whether this machine is a guest that returns its free memory to its host: each cold read then starts once the
     * memory the page cache's drop freed is returned ({@link PageCache#SETTLE_MS} after it).
     */
    public static boolean guestReturnsFreeMemory() {
        return PageCache.returnsFreeMemory();
    }

    static double seconds(long startNanos) {
        return (System.nanoTime() - startNanos) / 1e9;
    }
}
