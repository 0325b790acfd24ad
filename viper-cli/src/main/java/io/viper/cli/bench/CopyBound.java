package io.viper.cli.bench;

import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

/**
 * The bounds the bench compares each update with: copies of the model in this process, timed
 * ({@code MemorySegment.copy} in host memory, device to device on GPU 0). One thread at a time; the caller owns the
 * segments.
 */
final class CopyBound {
    private CopyBound() {}

    /** The GPU bound: the fastest of 5 device-to-device copies of the model on GPU 0. */
    static double deviceCopyMs(MemorySegment model) {
        GpuProvider g = ModelTensors.gpuProvider();
        try (DeviceBuffer src = ModelTensors.toDevice(model);
                DeviceBuffer dst = g.allocate(0, model.byteSize())) {
            double best = Double.POSITIVE_INFINITY;
            for (int i = 0; i < 5; i++) {
                long t0 = System.nanoTime();
                g.copyDeviceToDevice(0, src.devicePointer(), dst.devicePointer(), model.byteSize());
                best = Math.min(best, (System.nanoTime() - t0) / 1e6);
            }
            return best;
        }
    }

    /**
     * The fastest in-process copy of {@code src} ({@code MemorySegment.copy}) before the paths run, over at least 5
     * copies and 20 ms of copying, so that small sizes are timed after the copy is compiled: what the machine's memory
     * can do at its best ({@link TransferBench.Result#memcpyMs}, the plot's bound line).
     */
    static double memcpyMs(MemorySegment src, MemorySegment scratch) {
        return fastestCopyMs(src, scratch, 5, TimeUnit.MILLISECONDS.toNanos(20), 100_000);
    }

    /**
     * The fastest of at least {@code atLeast} copies of {@code src}, more while {@code forNanos} have not passed, at
     * most {@code atMost}.
     */
    private static double fastestCopyMs(
            MemorySegment src, MemorySegment scratch, int atLeast, long forNanos, int atMost) {
        double best = Double.POSITIVE_INFINITY;
        long until = System.nanoTime() + forNanos;
        for (int i = 0; i < atLeast || (System.nanoTime() < until && i < atMost); i++) {
            long t0 = System.nanoTime();
            MemorySegment.copy(src, 0, scratch, 0, src.byteSize());
            best = Math.min(best, (System.nanoTime() - t0) / 1e6);
        }
        return best;
    }

    /** The bound paired with one update: one in-process copy of {@code src} ({@code MemorySegment.copy}). */
    static double pairedCopyMs(MemorySegment src, MemorySegment scratch) {
        return fastestCopyMs(src, scratch, 1, 0, 1);
    }
}
