package io.viper.cli.bench;

import io.viper.CheckpointPolicy;
import io.viper.PublishHandle;
import io.viper.Snapshot;
import io.viper.TransferPath;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperProducer;
import io.viper.demo.ChildJvm;
import io.viper.errors.ViperException;
import io.viper.manifest.Tier;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.Notifier;
import io.viper.spi.Providers;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.LongToDoubleFunction;

/**
 * The measurement behind {@code viper bench transfer}: per path, a producer in this process and a consumer in a second
 * JVM ({@link BenchConsumerMain}), and for each model size the update latency from {@code publish} called to the
 * consumer's swap (both timestamps taken here: the consumer reports its swap over a pipe), with the producer's stall,
 * against an in-process memcpy of the same size measured right after each update from {@link #PAIRED_FROM_MS} of
 * copying up ({@link Row#boundSamplesMs}): the ratios are medians of each update against its own memcpy, so that a
 * second in which the machine's memory was slow (a shared host's neighbours) slows both sides of a ratio, not one.
 *
 * <p>Each (path, size) is warmed up before it is measured: at least {@link #MIN_WARMUP} updates and for at least the
 * warm-up time ({@link #FIRST_WARMUP_FACTOR} times longer for a path's first size), at most {@link #MAX_WARMUP}
 * updates, the time counted from the end of the first update. The first updates pay for page faults in staging and
 * receive buffers (every buffer is used at least once) and for code the JIT has not compiled yet. The cap is high
 * enough that small models warm up for the whole time: after 5,000 updates of 16 KiB the JIT was still compiling the
 * update path, and 1-5% of the measured updates took 2-5 ms, where after 5 s (17,000 to 50,000 updates) the slowest 1%
 * took 0.2-0.5 ms. The measured updates are the steady state of processes that compiled their update path; updates that
 * come seconds apart find the caches cold and cost more. The first update's latency is kept in the result too. One
 * thread; not reusable.
 */
public final class TransferBench {
    /**
     * Updates before measuring, at least: every staging and receive buffer is used more than once. Four were too few
     * for large models: over the PFS, the first 1 GiB updates after a sweep's smaller sizes took 5.3, then 2.9 s, and
     * only the seventh and later settled at 1.4 s (memory the guest had returned to its host is backed again on first
     * use, the first two versions' 2048 block files are swept).
     */
    public static final int MIN_WARMUP = 8;
    /** Updates before measuring, at most. */
    public static final int MAX_WARMUP = 50_000;
    /** The first size of each path is warmed up this many times longer: it warms up the code of the data path too. */
    public static final int FIRST_WARMUP_FACTOR = 3;
    /**
     * Sizes whose fastest memcpy takes less are not paired with a memcpy per update: their updates are not bound by the
     * memory's speed, and copies between back-to-back updates slowed them (16 KiB over ucx 0.36-0.58 ms against
     * 0.30-0.31 without, in two runs each); their bound is the fastest copy before the paths ran, repeated for each
     * update.
     */
    static final double PAIRED_FROM_MS = 1;
    /** The longest pause between measured updates. */
    public static final Duration MAX_INTERVAL = Duration.ofSeconds(60);
    /**
     * Staging buffers of the largest size the producer's budget holds: two staged versions, the one being filled, one
     * still leased.
     */
    public static final int STAGING_BUFFERS = 4;
    /**
     * Copies of the largest model the bench holds at once, in its two processes: the model and its memcpy's target
     * here, the producer's {@link #STAGING_BUFFERS} and the consumer's two receive buffers.
     */
    public static final int MODEL_COPIES = 2 + STAGING_BUFFERS + 2;
    /** The row's path of the polling baseline: {@link TransferPath#PFS} read by a consumer that polls. */
    static final String PFS_POLL = "pfs-poll";
    /** How long the consumer may take to say it is ready, or to swap one update in: a hung one fails the run. */
    static final Duration CONSUMER_WAIT = Duration.ofMinutes(10);

    /**
     * The measurements of one (size, path).
     *
     * @param boundSamplesMs the bound, per measured update: a memcpy of the model right after it, so that each update
     *     is compared with what the machine's memory did at that moment (on this kind of shared machine a memcpy of 1
     *     GiB takes 64 to 127 ms from one second to the next); for sizes under {@link #PAIRED_FROM_MS}, and for gpu
     *     (the device-to-device copy), the bound measured before the paths ran
     * @param warmupUpdates updates before the measured ones
     * @param firstMs the latency of the very first update (cold buffers and code)
     * @param latencyMs publish called to the consumer's swap, per measured update
     * @param stallMs the producer's stall, per measured update
     * @param announcedMs publish called to the manifest announced (staged, hashed, exposed)
     * @param transferMs the consumer's load, from its start until the bytes were in (NaN for the polling baseline)
     * @param verifyMs the consumer's check after the bytes were in, until the swap
     * @param changed the fraction of blocks that changed between versions (1: a full update)
     * @param movedBytes bytes the consumer moved, per measured update
     * @param reusedBytes bytes the consumer did not move (left in place or copied from the version it held), per
     *     measured update
     * @param copiedBytes bytes the producer copied into staging and hashed (the rest it found unchanged), per measured
     *     update
     */
    public record Row(
            long sizeBytes,
            String path,
            String transport,
            List<Double> boundSamplesMs,
            int warmupUpdates,
            double firstMs,
            List<Double> latencyMs,
            List<Double> stallMs,
            List<Double> announcedMs,
            List<Double> transferMs,
            List<Double> verifyMs,
            double changed,
            List<Double> movedBytes,
            List<Double> reusedBytes,
            List<Double> copiedBytes) {
        public double median() {
            return percentile(latencyMs, 0.5);
        }

        /** The median bound. */
        public double boundMs() {
            return percentile(boundSamplesMs, 0.5);
        }

        /** The median of each update's latency over the bound measured with it. */
        public double xBound() {
            return pairedMedian(latencyMs, boundSamplesMs);
        }

        /** The median of each update's stall over the bound measured with it. */
        public double stallXBound() {
            return pairedMedian(stallMs, boundSamplesMs);
        }

        public double p90() {
            return percentile(latencyMs, 0.9);
        }

        public double p99() {
            return percentile(latencyMs, 0.99);
        }

        /** Model bytes per second of median latency, in GB/s. */
        public double gbps() {
            return sizeBytes / (median() / 1e3) / 1e9;
        }

        public double stallMedian() {
            return percentile(stallMs, 0.5);
        }

        public double announcedMedian() {
            return percentile(announcedMs, 0.5);
        }

        public double movedMedian() {
            return percentile(movedBytes, 0.5);
        }

        public double reusedMedian() {
            return percentile(reusedBytes, 0.5);
        }

        public double copiedMedian() {
            return percentile(copiedBytes, 0.5);
        }
    }

    /** Every row, and the fastest memcpy (and device copy) of each size before the paths ran. */
    public record Result(
            Map<Long, Double> memcpyMs, Map<Long, Double> deviceCopyMs, List<Row> rows, Duration interval) {
        /**
         * A delta row's latency as a share of the full update of the same size and path in this run: the ratio of their
         * {@linkplain Row#xBound() latencies over the bound}, so that the memory's speed while each was measured
         * cancels out. Empty for a full row, or without a full row to compare with.
         */
        public OptionalDouble ofFullUpdate(Row delta) {
            if (delta.changed() >= 1) {
                return OptionalDouble.empty();
            }
            return rows.stream()
                    .filter(r -> r.changed() >= 1
                            && r.sizeBytes() == delta.sizeBytes()
                            && r.path().equals(delta.path()))
                    .mapToDouble(full -> delta.xBound() / full.xBound())
                    .findFirst();
        }
    }

    private final TransferSettings settings;

    public TransferBench(TransferSettings settings) {
        this.settings = settings;
    }

    /** Runs every path over every size; a path whose transport is unavailable is skipped with a line on stderr. */
    public Result run() throws Exception {
        long largest =
                settings.sizes().stream().mapToLong(Long::longValue).max().orElseThrow();
        Map<Long, Double> memcpy = new LinkedHashMap<>();
        Map<Long, Double> d2d = new LinkedHashMap<>();
        List<Row> rows = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment model = arena.allocate(largest, 4096);
            ModelTensors.fill(model);
            MemorySegment scratch = arena.allocate(largest, 4096);
            for (long size : settings.sizes()) {
                memcpy.put(size, CopyBound.memcpyMs(model.asSlice(0, size), scratch));
                if (settings.paths().stream().anyMatch(p -> p.tier() == Tier.GPU)) {
                    d2d.put(size, CopyBound.deviceCopyMs(model.asSlice(0, size)));
                }
            }
            List<Run> runs = new ArrayList<>(
                    settings.paths().stream().map(p -> new Run(p, false)).toList());
            if (settings.pollBaseline() && settings.paths().contains(TransferPath.PFS)) {
                runs.add(new Run(TransferPath.PFS, true));
            }
            for (Run run : runs) {
                TransferPath path = run.path();
                if (path == TransferPath.INLINE && settings.sizes().getFirst() > Notifier.MAX_INLINE_BYTES) {
                    continue; // every size is too large to travel inline
                }
                if (path != TransferPath.PFS && path != TransferPath.INLINE) {
                    var why = Providers.transport(path.scheme()).flatMap(t -> t.unavailableReason());
                    if (why.isPresent()) {
                        System.err.println("viper: skipping path " + run.label() + ": " + why.get());
                        continue;
                    }
                }
                settings.progress().accept("measuring " + run.label() + " (" + path.scheme() + ")...");
                Path pfs = settings.dir().resolve(run.label());
                Files.createDirectories(pfs);
                // the bound of one measured update of a size, in ms
                LongToDoubleFunction bound = path.tier() == Tier.GPU
                        ? d2d::get
                        : size -> memcpy.get(size) < PAIRED_FROM_MS
                                ? memcpy.get(size)
                                : CopyBound.pairedCopyMs(model.asSlice(0, size), scratch);
                rows.addAll(measure(run, model, largest, pfs, bound));
            }
        }
        return new Result(memcpy, d2d, rows, settings.interval());
    }

    /** One path measured: {@code poll} for the polling baseline over the PFS. */
    private record Run(TransferPath path, boolean poll) {
        /** The row's path: the path's name, or {@value #PFS_POLL}. */
        String label() {
            return poll ? PFS_POLL : path.displayName();
        }
    }

    private List<Row> measure(Run run, MemorySegment model, long largest, Path pfs, LongToDoubleFunction bound)
            throws Exception {
        TransferPath path = run.path();
        String scheme = path.scheme();
        boolean poll = run.poll();
        boolean inline = path == TransferPath.INLINE;
        boolean file = path == TransferPath.PFS;
        Viper.Builder b = Viper.builder()
                .notifier("embedded://127.0.0.1:0")
                .config("viper.producer.staging.budget.bytes", Long.toString(STAGING_BUFFERS * largest + (4 << 20)))
                // The polling baseline reads safetensors files, as users' tools do today: no blocks for it.
                .config("viper.block.bytes", Long.toString(poll ? 0 : settings.blockBytes()));
        // inline: the bytes ride in the announcement (tcp is there for the rules, never used); elsewhere never, so that
        // the transport is measured.
        String served = inline ? TransferPath.TCP.scheme() : scheme;
        b.config("viper.transports", file ? "" : served + "://127.0.0.1:0");
        b.config(ViperConfig.PRODUCER_INLINE_BYTES.name(), inline ? Integer.toString(Notifier.MAX_INLINE_BYTES) : "0");
        if (file) {
            b.pfsRoot(pfs);
        }
        settings.producerConfig().forEach(b::config);
        boolean gpu = path.tier() == Tier.GPU;
        List<Row> rows = new ArrayList<>();
        try (DeviceBuffer onGpu = gpu ? ModelTensors.toDevice(model) : null;
                Viper viper = b.build();
                ViperProducer producer = viper.producer("bench", CheckpointPolicy.never())) {
            List<String> cmd = new ArrayList<>();
            if (poll) {
                cmd.addAll(List.of(
                        "poll",
                        pfs.resolve("bench").toString(),
                        Long.toString(settings.pollInterval().toMillis())));
            } else {
                cmd.addAll(List.of("viper", viper.notifierUri().toString(), "bench", served));
                cmd.add(file ? pfs.toString() : "-"); // a consumer reads file:// locations only from its own PFS
                settings.consumerConfig().forEach((k, v) -> cmd.add(k + "=" + v));
            }
            try (ChildJvm child = ChildJvm.start(
                    "benchmark consumer",
                    ChildJvm.command(
                            List.of("-Xmx512m", "-Dviper.bench.verbose=" + settings.verbose()),
                            BenchConsumerMain.class.getName(),
                            cmd),
                    Optional.empty())) {
                child.awaitLine("ready", CONSUMER_WAIT);
                ModelChanges changes = new ModelChanges(settings.blockBytes());
                for (long size : settings.sizes()) {
                    if (inline && size > Notifier.MAX_INLINE_BYTES) {
                        continue;
                    }
                    Snapshot snapshot = gpu
                            ? sink -> ModelTensors.splitDevice(sink, onGpu, size)
                            : settings.declareChanges()
                                    ? sink -> ModelTensors.split(sink, model.asSlice(0, size), changes)
                                    : sink -> ModelTensors.split(sink, model.asSlice(0, size));
                    for (double changed : settings.changed()) {
                        // The first size of a path also warms up the code of the whole data path: longer.
                        Duration warmup = size == settings.sizes().getFirst()
                                        && changed == settings.changed().getFirst()
                                ? settings.warmup().multipliedBy(FIRST_WARMUP_FACTOR)
                                : settings.warmup();
                        // A GPU model is not changed (it lives on the device): its updates move everything.
                        Runnable change =
                                gpu || poll ? () -> {} : () -> changes.change(model.asSlice(0, size), changed);
                        rows.add(measureSize(
                                producer,
                                snapshot,
                                change,
                                child,
                                run.label(),
                                scheme,
                                size,
                                bound,
                                warmup,
                                changed,
                                poll ? pollPhase(size, settings.pollInterval()) : () -> 0));
                    }
                }
            }
        }
        return rows;
    }

    /**
     * The pause before each measured update of the polling baseline: uniform over one poll interval (seeded by the
     * size, so that a run repeats), so that each update is published at a phase of the poller's schedule unrelated to
     * the last one's, as a training job's are, and the poller waits half an interval on average. Without it the poller,
     * which sleeps an interval after each load, looked again a fixed time after each swap, and the bench published the
     * next update right after that swap: at 16 KiB it waited a whole interval every time (a median of 1001.9 ms), and
     * at 1 GiB, where the flush ends near the poller's next look, its median swung between runs from 1316 to 2235 ms
     * with whether the flush ended before that look or after.
     */
    static LongSupplier pollPhase(long size, Duration pollInterval) {
        SplittableRandom random = new SplittableRandom(size);
        long intervalMs = pollInterval.toMillis();
        return () -> intervalMs > 0 ? random.nextLong(intervalMs) : 0;
    }

    private Row measureSize(
            ViperProducer producer,
            Snapshot snapshot,
            Runnable change,
            ChildJvm child,
            String path,
            String scheme,
            long size,
            LongToDoubleFunction bound,
            Duration warmup,
            double changed,
            LongSupplier pauseMs)
            throws Exception {
        settings.progress()
                .accept("  " + path + " " + size + " bytes, " + Math.round(changed * 1000) / 10.0
                        + "% of blocks changed...");
        // The warm-up time runs from the end of the first update: that one pays for the first touch of
        // every buffer it uses (seconds at 1 GiB), and a warm-up it used up would leave too few updates.
        change.run();
        double first = update(producer, snapshot, child, scheme)[0];
        int warmups = 1;
        long warmupEnds = System.nanoTime() + warmup.toNanos();
        while (warmups < MIN_WARMUP || (warmups < MAX_WARMUP && System.nanoTime() < warmupEnds)) {
            change.run();
            update(producer, snapshot, child, scheme);
            warmups++;
        }
        List<List<Double>> m = List.of(
                new ArrayList<>(),
                new ArrayList<>(),
                new ArrayList<>(),
                new ArrayList<>(),
                new ArrayList<>(),
                new ArrayList<>(),
                new ArrayList<>(),
                new ArrayList<>());
        List<Double> bounds = new ArrayList<>();
        for (int i = 0; i < settings.repeat(); i++) {
            if (settings.interval().isPositive()) {
                Thread.sleep(settings.interval());
            }
            Thread.sleep(pauseMs.getAsLong());
            change.run();
            double[] one = update(producer, snapshot, child, scheme);
            for (int k = 0; k < m.size(); k++) {
                m.get(k).add(one[k]);
            }
            // after the update, not before: a copy before it would warm the caches an --interval is there to let go
            // cold
            bounds.add(bound.applyAsDouble(size));
        }
        return new Row(
                size, path, scheme, bounds, warmups, first, m.get(0), m.get(1), m.get(2), m.get(3), m.get(4), changed,
                m.get(5), m.get(6), m.get(7));
    }

    /**
     * One update: publish, wait for the consumer's swap (and the PFS flush); in ms {latency, stall, announced, the
     * consumer's transfer, its verification, bytes moved, bytes reused, bytes the producer copied}.
     */
    private static double[] update(ViperProducer producer, Snapshot snapshot, ChildJvm child, String scheme)
            throws Exception {
        long t0 = System.nanoTime();
        PublishHandle h = producer.publish(snapshot, Map.of());
        long[] announcedAt = new long[1];
        CompletableFuture<Void> announced = h.announced().thenRun(() -> announcedAt[0] = System.nanoTime());
        String line = child.awaitLine("swapped " + h.version() + " ", CONSUMER_WAIT);
        long receivedNs = System.nanoTime();
        String[] f = line.split(" ");
        if (f.length != 8 || !f[5].equals(scheme)) {
            throw new ViperException(
                    ViperException.Reason.INTERNAL, "consumer used another path than " + scheme + ": " + line);
        }
        // The consumer's clock reading at the swap: the line's trip through the pipe is not the update's.
        long swappedNs = Long.parseLong(f[7]);
        if (swappedNs < t0 || swappedNs > receivedNs) {
            throw new ViperException(
                    ViperException.Reason.INTERNAL,
                    "the consumer swapped at " + swappedNs + " ns, outside this process's publish (" + t0
                            + ") to reading the line (" + receivedNs
                            + "): System.nanoTime is not one clock for both processes here");
        }
        double ms = (swappedNs - t0) / 1e6;
        h.durable().get(120, TimeUnit.SECONDS);
        announced.get(120, TimeUnit.SECONDS);
        return new double[] {
            ms,
            h.stallNanos() / 1e6,
            (announcedAt[0] - t0) / 1e6,
            Double.parseDouble(f[3]),
            Double.parseDouble(f[4]),
            Double.parseDouble(f[2]),
            Double.parseDouble(f[6]),
            h.copiedBytes()
        };
    }

    /** The median of {@code values[i] / bounds[i]}: each sample against the bound measured with it; NaN when empty. */
    static double pairedMedian(List<Double> values, List<Double> bounds) {
        if (values.size() != bounds.size()) {
            throw new IllegalArgumentException(values.size() + " samples but " + bounds.size() + " bounds");
        }
        List<Double> ratios = new ArrayList<>(values.size());
        for (int i = 0; i < values.size(); i++) {
            ratios.add(values.get(i) / bounds.get(i));
        }
        return percentile(ratios, 0.5);
    }

    /** The {@code q} quantile (nearest rank) of {@code values}; NaN when empty. */
    public static double percentile(List<Double> values, double q) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        if (v.length == 0) {
            return Double.NaN;
        }
        int idx = (int) Math.ceil(q * v.length) - 1;
        return v[Math.max(0, Math.min(v.length - 1, idx))];
    }
}
