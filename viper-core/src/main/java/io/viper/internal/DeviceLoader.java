package io.viper.internal;

import io.viper.ViperConfig;
import io.viper.errors.ViperException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.ByteRange;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import io.viper.spi.Providers;
import io.viper.spi.TransportClient;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The GPU part of a consumer. It decides once whether the consumer serves from GPU memory
 * ({@code viper.consumer.device} names a CUDA device that a working {@link GpuProvider} sees) and
 * says why not; counts the GPU memory its models hold against
 * {@code viper.consumer.gpu.budget.bytes}; and loads a version from a GPU-tier location into a new
 * device buffer, verified on the device. The buffer is freed when the loaded model is released.
 *
 * <p>Threads: created with the consumer; {@link #freeBytes()} and {@link #load} run on the fetch
 * thread; a buffer is freed by whichever thread drops the last reference to its model (an
 * inference thread closing its lease, say). Thread-safe.
 */
final class DeviceLoader implements Loader {
    private static final System.Logger LOG = System.getLogger(DeviceLoader.class.getName());

    private final String model;
    private final Verifier verifier;
    private final int device;
    private final long budgetBytes;
    private final GpuProvider gpu;
    private final String noGpuReason;
    private final AtomicLong bytesHeld = new AtomicLong();

    DeviceLoader(String model, ViperConfig config, Verifier verifier) {
        this.model = model;
        this.verifier = verifier;
        this.device = ViperConfig.cudaDevice(config.get(ViperConfig.CONSUMER_DEVICE));
        this.budgetBytes = config.get(ViperConfig.CONSUMER_GPU_BUDGET);
        if (device < 0) {
            this.gpu = null;
            this.noGpuReason = "consumer serves on host (viper.consumer.device=host)";
            return;
        }
        Optional<GpuProvider> p = Providers.gpu();
        Optional<String> why = Providers.gpuUnavailableReason();
        if (why.isEmpty() && device >= p.get().deviceCount()) {
            why = Optional.of("no CUDA driver/device: viper.consumer.device asks for CUDA device " + device + " but "
                    + p.get().deviceCount() + " are visible");
        }
        this.gpu = why.isEmpty() ? p.get() : null;
        this.noGpuReason = why.orElse(null);
        if (why.isPresent()) {
            LOG.log(System.Logger.Level.WARNING, "consumer {0}: serving on host: {1}", model, why.get());
        }
    }

    /** Whether this consumer serves from GPU memory. */
    boolean servesOnGpu() {
        return gpu != null;
    }

    /** Why it does not serve from GPU memory, or null when it does. */
    String noGpuReason() {
        return noGpuReason;
    }

    /** GPU memory the next version may take: the device's free memory, within what the budget leaves; 0 on host. */
    long freeBytes() {
        if (gpu == null) {
            return 0;
        }
        try {
            return Math.max(0, Math.min(gpu.freeBytes(device), budgetBytes - bytesHeld.get()));
        } catch (ViperException e) {
            LOG.log(System.Logger.Level.WARNING, "consumer {0}: GPU memory query failed: {1}", model, e.getMessage());
            return 0;
        }
    }

    @Override
    public Loaded load(Manifest m, Location loc, TransportClient client) {
        long size = m.totalBytes();
        DeviceBuffer buf = gpu.allocate(device, Math.max(1, size));
        bytesHeld.addAndGet(buf.byteSize());
        Runnable free = () -> {
            buf.close();
            bytesHeld.addAndGet(-buf.byteSize());
        };
        long transferDone;
        try {
            client.readToDevice(m, loc, List.of(new ByteRange(0, size, 0)), buf);
            transferDone = System.nanoTime();
            verifier.verifyOnDevice(m, loc, gpu, device, buf);
        } catch (RuntimeException e) {
            free.run();
            throw e;
        }
        return new Loaded(new LoadedModel(m, buf, free), size, transferDone);
    }
}
