package io.viper.demo;

import io.viper.CheckpointPolicy;
import io.viper.ModelUpdate;
import io.viper.PublishHandle;
import io.viper.Snapshot;
import io.viper.Viper;
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
 * What one checkpoint of the demo's model costs over its transport on this machine, measured before
 * the run so that the plan's {@code t_s} and {@code t_load} are measured figures rather than assumed
 * ones: a producer and a consumer in this process publish and swap the model {@link #WARMUP} times
 * (the JIT compiles the data path), then {@link #MEASURED} times, each measured as the producer's
 * stall ({@code t_s}) and the time from the end of the stall to the consumer's swap ({@code t_load}),
 * and the {@link CostModel} is fitted on those samples. Not thread-safe; takes a second or two.
 */
public final class TransferCalibration {
    /** Updates before measuring. */
    public static final int WARMUP = 200;
    /** Updates measured. */
    public static final int MEASURED = 100;

    private TransferCalibration() {
    }

    /**
     * The cost model of {@code transport}'s path fitted on measured updates of a {@code modelBytes}
     * model; {@code scratch} holds the PFS repository of the {@code file} transport.
     */
    public static CostModel measure(DemoTransport transport, long modelBytes, Path scratch) throws Exception {
        String path = transport.costPath();
        Viper.Builder producerSide = Viper.builder().notifier("embedded://127.0.0.1:0").transports(transport.producerTransports().toArray(String[]::new));
        Path pfs = Files.createDirectories(scratch.resolve("calibration-pfs"));
        if (transport == DemoTransport.FILE) {
            producerSide.pfsRoot(pfs);
        }
        List<CostModel.Sample> samples = new ArrayList<>();
        try (Arena arena = Arena.ofConfined(); Viper p = producerSide.build(); ViperProducer producer = p.producer("calibration", CheckpointPolicy.never())) {
            Viper.Builder consumerSide = Viper.builder().notifier(p.notifierUri().toString()).consumerPaths(transport.consumerPaths().toArray(String[]::new));
            if (transport == DemoTransport.FILE) {
                consumerSide.pfsRoot(pfs);
            }
            MemorySegment model = arena.allocate(modelBytes);
            Snapshot snapshot = sink -> sink.add("parameters", DType.U8, new long[] {modelBytes}, model);
            try (Viper c = consumerSide.build(); ViperConsumer consumer = c.consumer("calibration")) {
                BlockingQueue<Long> swapped = new LinkedBlockingQueue<>();
                consumer.onUpdate((ModelUpdate u) -> swapped.add(System.nanoTime()));
                for (int i = 0; i < WARMUP + MEASURED; i++) {
                    long t0 = System.nanoTime();
                    PublishHandle h = producer.publish(snapshot, Map.of());
                    Long at = swapped.poll(60, TimeUnit.SECONDS);
                    if (at == null) {
                        throw new ViperTimeoutException("demo: calibrating " + transport.displayName() + ": update " + h.version()
                                + " did not arrive within 60 s");
                    }
                    h.durable().get(60, TimeUnit.SECONDS);
                    if (i >= WARMUP) {
                        double stall = h.stallNanos() / 1e9;
                        samples.add(new CostModel.Sample(CostModel.Phase.SAVE, path, modelBytes, stall));
                        samples.add(new CostModel.Sample(CostModel.Phase.LOAD, path, modelBytes, Math.max(0, (at - t0) / 1e9 - stall)));
                    }
                }
            }
        }
        return CostModel.fit(samples);
    }
}
