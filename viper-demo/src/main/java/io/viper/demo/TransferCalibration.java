package io.viper.demo;

import io.viper.CheckpointPolicy;
import io.viper.ModelUpdate;
import io.viper.PublishHandle;
import io.viper.Snapshot;
import io.viper.TransferPath;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperConsumer;
import io.viper.ViperProducer;
import io.viper.errors.ViperTimeoutException;
import io.viper.predictor.CostModel;
import io.viper.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * What one checkpoint of the demo's model costs over its transport on this machine, measured before the run so that the
 * plan's {@code t_s} and {@code t_load} are measured figures rather than assumed ones: a producer and a consumer in
 * this process publish and swap the model {@link #WARMUP} times (the JIT compiles the data path), then
 * {@link #MEASURED} times, each measured as the producer's stall ({@code t_s}) and the time from the end of the stall
 * to the consumer's swap ({@code t_load}), and the {@link CostModel} is fitted on those samples. Not thread-safe; takes
 * a second or two.
 *
 * <p>{@link #warmUp} runs the same updates unmeasured: the demo's producer and consumer processes call it before their
 * run, so that the data path they use a few dozen times in the run is loaded and compiled in each of them, not
 * interpreted during the first updates the run measures.
 */
public final class TransferCalibration {
    /** Updates before measuring. */
    public static final int WARMUP = 3000;
    /** Updates measured. */
    public static final int MEASURED = 100;
    /** Updates each of the demo's processes runs ({@link #warmUp}) before its run. */
    public static final int PROCESS_WARMUP = 3000;

    private TransferCalibration() {}

    /**
     * The cost model of {@code transport}'s path fitted on measured updates of a {@code modelBytes} model;
     * {@code scratch} holds the PFS repository of the {@code file} transport.
     */
    public static CostModel measure(DemoTransport transport, long modelBytes, Path scratch) throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment model = arena.allocate(modelBytes);
            Snapshot snapshot = sink -> sink.add("parameters", DType.U8, new long[] {modelBytes}, model);
            return CostModel.fit(updates(transport, snapshot, modelBytes, scratch, WARMUP, MEASURED));
        }
    }

    /**
     * Publishes and swaps {@code model} {@code updates} times over {@code transport} in this process, unmeasured, in a
     * temporary directory it removes after. The run's own snapshot (its tensors, their types and shapes) warms the very
     * code the run will call, not only a path like it.
     */
    public static void warmUp(DemoTransport transport, Snapshot model, int updates) throws Exception {
        Path scratch = Files.createTempDirectory("viper-demo-warm-up");
        try {
            updates(transport, model, 0, scratch, updates, 0);
        } finally {
            DemoRunner.deleteQuietly(scratch);
        }
    }

    /** {@code warmup} updates, then {@code measured} ones whose stall and load times it returns. */
    private static List<CostModel.Sample> updates(
            DemoTransport transport, Snapshot snapshot, long modelBytes, Path scratch, int warmup, int measured)
            throws Exception {
        TransferPath path = transport.path();
        Viper.Builder producerSide = Viper.builder()
                .notifier("embedded://127.0.0.1:0")
                .transports(transport.producerTransports().toArray(String[]::new))
                .config(ViperConfig.PRODUCER_INLINE_BYTES.name(), transport.inlineBytes());
        Path pfs = Files.createDirectories(scratch.resolve("calibration-pfs"));
        if (transport == DemoTransport.PFS) {
            producerSide.pfsRoot(pfs);
        }
        List<CostModel.Sample> samples = new ArrayList<>();
        try (Viper p = producerSide.build();
                ViperProducer producer = p.producer("calibration", CheckpointPolicy.never())) {
            Viper.Builder consumerSide = Viper.builder()
                    .notifier(p.notifierUri().toString())
                    .consumerPaths(transport.consumerPaths().toArray(String[]::new));
            if (transport == DemoTransport.PFS) {
                consumerSide.pfsRoot(pfs);
            }
            try (Viper c = consumerSide.build();
                    ViperConsumer consumer = c.consumer("calibration")) {
                BlockingQueue<Long> swapped = new LinkedBlockingQueue<>();
                consumer.onUpdate((ModelUpdate u) -> swapped.add(System.nanoTime()));
                for (int i = 0; i < warmup + measured; i++) {
                    long t0 = System.nanoTime();
                    PublishHandle h = producer.publish(snapshot, Map.of());
                    Long at = swapped.poll(60, TimeUnit.SECONDS);
                    if (at == null) {
                        throw new ViperTimeoutException("demo: calibrating " + transport.displayName() + ": update "
                                + h.version() + " did not arrive within 60 s");
                    }
                    h.durable().get(60, TimeUnit.SECONDS);
                    if (i >= warmup) {
                        double stall = h.stallNanos() / 1e9;
                        samples.add(new CostModel.Sample(CostModel.Phase.SAVE, path, modelBytes, stall));
                        samples.add(new CostModel.Sample(
                                CostModel.Phase.LOAD, path, modelBytes, Math.max(0, (at - t0) / 1e9 - stall)));
                    }
                }
            }
        }
        return samples;
    }
}
