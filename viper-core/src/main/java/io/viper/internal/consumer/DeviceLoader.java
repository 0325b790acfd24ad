package io.viper.internal.consumer;

import io.viper.ViperConfig;
import io.viper.errors.ViperCorruptDataException;
import io.viper.errors.ViperException;
import io.viper.internal.memory.MemoryBudget;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.ByteRange;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import io.viper.spi.Providers;
import io.viper.spi.TransportClient;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The GPU part of a consumer. It decides once whether the consumer serves from GPU memory
 * ({@code viper.consumer.device} names a CUDA device that a working {@link GpuProvider} sees) and says why not; counts
 * the GPU memory its models hold against {@code viper.consumer.gpu.budget.bytes} and, with every other consumer of the
 * instance, {@code viper.memory.gpu.budget.bytes} (a child {@link MemoryBudget} of the instance's); and loads a version
 * from a GPU-tier location into a new device buffer, verified on the device. The buffer is freed when the loaded model
 * is released.
 *
 * <p>Delta ({@link BlockPlan}): when the version has blocks and the serving version is in GPU memory on the same
 * device, the blocks it has are copied from it device to device and only the others are read, as ranges, from the
 * location. The assembled model is verified on the device exactly like a pulled one; if that fails, the whole model is
 * read again and verified, so a bad block, copied or pulled, is refetched. A new buffer is allocated per version either
 * way (there are no GPU receive slots), so nothing is left in place.
 *
 * <p>Threads: created with the consumer; {@link #freeBytes()} and {@link #load} run on the fetch thread; a buffer is
 * freed by whichever thread drops the last reference to its model (an inference thread closing its lease, say);
 * {@link #close()} runs with the consumer's. Thread-safe.
 */
final class DeviceLoader implements Loader, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(DeviceLoader.class.getName());

    private final String model;
    private final Verifier verifier;
    private final int device;
    /** The consumer's GPU budget; null on host. */
    private final MemoryBudget budget;

    private final GpuProvider gpu;
    private final String noGpuReason;
    private final Supplier<LoadedModel> base;

    /**
     * @param base the version to copy unchanged blocks from, retained for the caller
     *     ({@link ServingModel#retainCurrent}), or null when there is none
     */
    DeviceLoader(
            String model, ViperConfig config, MemoryBudget instanceGpu, Verifier verifier, Supplier<LoadedModel> base) {
        this.model = model;
        this.verifier = verifier;
        this.base = base;
        this.device = ViperConfig.cudaDevice(config.get(ViperConfig.CONSUMER_DEVICE));
        if (device < 0) {
            this.budget = null;
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
        this.budget = gpu == null
                ? null
                : instanceGpu.child(
                        "consumer " + model,
                        ViperConfig.CONSUMER_GPU_BUDGET.name(),
                        config.get(ViperConfig.CONSUMER_GPU_BUDGET));
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
            return Math.max(0, Math.min(gpu.freeBytes(device), budget.headroom()));
        } catch (ViperException e) {
            LOG.log(System.Logger.Level.WARNING, "consumer {0}: GPU memory query failed: {1}", model, e.getMessage());
            return 0;
        }
    }

    @Override
    public Loaded load(Manifest m, Location loc, TransportClient client) {
        long size = m.totalBytes();
        MemoryBudget.Reservation reserved =
                budget.reserve(Math.max(1, size), () -> m.model() + " v" + m.version() + " on GPU " + device);
        DeviceBuffer buf;
        try {
            buf = gpu.allocate(device, Math.max(1, size));
        } catch (RuntimeException | Error e) {
            reserved.close();
            throw e;
        }
        Runnable free = () -> {
            buf.close();
            reserved.close();
        };
        try {
            Received r = receive(m, loc, client, buf);
            return new Loaded(new LoadedModel(m, buf, free), r.movedBytes(), r.transferDoneNs(), r.reusedBytes());
        } catch (RuntimeException e) {
            free.run();
            throw e;
        }
    }

    /**
     * Closes the consumer's GPU budget; versions still leased keep counting until they are freed (a warning names
     * them).
     */
    @Override
    public void close() {
        if (budget != null) {
            budget.close();
        }
    }

    /** What a load moved and reused, and {@link System#nanoTime()} when the bytes were in. */
    private record Received(long movedBytes, long reusedBytes, long transferDoneNs) {}

    /** Fills {@code buf} with the verified version. */
    private Received receive(Manifest m, Location loc, TransportClient client, DeviceBuffer buf) {
        LoadedModel held = m.blockBytes() > 0 ? base.get() : null;
        BlockPlan plan;
        try {
            DeviceBuffer from = held == null ? null : held.deviceData();
            plan = from == null || from.device() != device ? null : BlockPlan.of(m, held.manifest(), null);
            if (plan == null || plan.copiedBytes() == 0) {
                return readVerified(m, loc, client, buf);
            }
            LOG.log(
                    System.Logger.Level.DEBUG,
                    "{0} v{1} on GPU {2}: {3}",
                    m.model(),
                    Long.toString(m.version()),
                    Long.toString(device),
                    plan);
            for (BlockPlan.Copy c : plan.copies()) {
                gpu.copyDeviceToDevice(
                        device, from.pointer(c.from(), c.length()), buf.pointer(c.to(), c.length()), c.length());
            }
        } finally {
            if (held != null) {
                held.releaseRef();
            }
        }
        if (!plan.pulls().isEmpty()) {
            client.readToDevice(m, loc, plan.pulls(), buf);
        }
        long transferDone = System.nanoTime();
        try {
            verifier.verifyOnDevice(m, loc, gpu, device, buf);
            return new Received(plan.pulledBytes(), plan.reusedBytes(), transferDone);
        } catch (ViperCorruptDataException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "{0} v{1}: the blocks copied on GPU {2} from the version held and pulled from {3}"
                            + " did not verify ({4}); pulling the whole version",
                    m.model(),
                    Long.toString(m.version()),
                    Long.toString(device),
                    loc.uri(),
                    e.getMessage());
            Received full = readVerified(m, loc, client, buf);
            return new Received(plan.pulledBytes() + full.movedBytes(), 0, full.transferDoneNs());
        }
    }

    /** Reads the whole version into {@code buf} and verifies it. */
    private Received readVerified(Manifest m, Location loc, TransportClient client, DeviceBuffer buf) {
        long size = m.totalBytes();
        client.readToDevice(m, loc, List.of(new ByteRange(0, size, 0)), buf);
        long transferDone = System.nanoTime();
        verifier.verifyOnDevice(m, loc, gpu, device, buf);
        return new Received(size, 0, transferDone);
    }
}
