package io.viper.internal.producer;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperUnsupportedException;
import io.viper.hash.ParallelHash64;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import io.viper.spi.Providers;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * The GPU part of a producer, used only for snapshots with GPU tensors and for GPU transports. On the training thread
 * it checks each GPU tensor and stages the snapshot: device to device into the staging buffer's GPU memory when the
 * device has room (then GPU consumers read that copy), else device to host into page-locked host staging. On the
 * background thread it completes the host copy of a GPU-staged version and computes the phash64 that GPU consumers
 * check. Stateless: the {@link StagingBuffer} owns the GPU and pinned memory.
 */
final class GpuStaging {
    private static final System.Logger LOG = System.getLogger(GpuStaging.class.getName());
    /** GPU memory left free when staging there (kernels and the framework need some). */
    private static final long GPU_HEADROOM = 256L << 20;
    /** The work left for the background thread when a snapshot was staged in host memory only. */
    static final Runnable NOTHING_LEFT = () -> {};

    private final String model;

    GpuStaging(String model) {
        this.model = model;
    }

    /** Training thread: checks a GPU tensor of a snapshot against the devices and the tensors before it. */
    void check(String name, long devicePointer, int device, List<SnapshotTensor> before) {
        GpuProvider g = gpu();
        if (devicePointer == 0) {
            throw new ViperConfigException("tensor " + name + ": device pointer is null");
        }
        if (device < 0 || device >= g.deviceCount()) {
            throw new ViperConfigException(
                    "tensor " + name + ": CUDA device " + device + " does not exist (" + g.deviceCount() + " visible)");
        }
        if (before.stream().anyMatch(o -> o.onDevice() && o.device() != device)) {
            throw new ViperConfigException("tensor " + name + ": a snapshot's GPU tensors must all be on one device");
        }
    }

    /** Who hashes the host staging as its bytes land; any thread may report a range that is final. */
    @FunctionalInterface
    interface Arrivals {
        void arrived(long from, long length);
    }

    /** The host copy of a GPU-staged version comes down in pieces of this size, each hashed as it lands. */
    private static final long DOWN_PIECE = 4L << 20;

    /**
     * Training thread (the stall): copies a snapshot with GPU tensors into {@code buffer}, laid out as {@code infos}.
     * On the GPU when it has room for {@code total} bytes and the headroom (host tensors go to the host staging; the
     * background thread completes both copies), else into pinned host staging.
     *
     * @param hashes the host hashes (tensors' and blocks'): each range is reported once it is in the host staging
     * @return what the background thread must do before the host staging holds every tensor
     */
    Runnable stage(
            List<SnapshotTensor> tensors,
            List<TensorInfo> infos,
            StagingBuffer buffer,
            long total,
            long version,
            Arrivals hashes) {
        MemorySegment dst = buffer.writable();
        GpuProvider g = gpu();
        int dev = tensors.stream()
                .filter(SnapshotTensor::onDevice)
                .findFirst()
                .orElseThrow()
                .device();
        long free = g.freeBytes(dev);
        if (free >= total + GPU_HEADROOM) {
            DeviceBuffer db = buffer.gpu().deviceMemory(g, dev, total);
            for (int i = 0; i < tensors.size(); i++) {
                SnapshotTensor s = tensors.get(i);
                TensorInfo info = infos.get(i);
                if (s.onDevice()) {
                    g.copyDeviceToDevice(
                            s.device(), s.devicePointer(), db.pointer(info.offset(), info.length()), info.length());
                } else {
                    s.copyTo(dst, info.offset());
                    hashes.arrived(info.offset(), info.length());
                }
            }
            buffer.deviceStaged();
            return () -> completeHostCopy(tensors, infos, buffer, hashes);
        }
        // Pinned once per buffer, so that this copy (the stall) runs at DMA speed from the next version on.
        String pageable = buffer.gpu().pinHost(g, dev);
        LOG.log(
                System.Logger.Level.INFO,
                "producer {0} v{1}: staging in {2} host memory: CUDA device {3} has {4} bytes free, the model needs"
                        + " {5}",
                model,
                Long.toString(version),
                pageable == null ? "pinned" : "pageable",
                Long.toString(dev),
                Long.toString(free),
                Long.toString(total + GPU_HEADROOM));
        for (int i = 0; i < tensors.size(); i++) {
            SnapshotTensor s = tensors.get(i);
            TensorInfo info = infos.get(i);
            if (s.onDevice()) {
                g.copyToHost(s.device(), s.devicePointer(), dst.asSlice(info.offset(), info.length()));
            } else {
                s.copyTo(dst, info.offset());
            }
            hashes.arrived(info.offset(), info.length());
        }
        return NOTHING_LEFT;
    }

    /**
     * Background thread: the host copy of a GPU-staged version, GPU tensors down and host tensors up. Pinning happens
     * here, off the training thread, once per buffer.
     */
    private void completeHostCopy(
            List<SnapshotTensor> tensors, List<TensorInfo> infos, StagingBuffer buffer, Arrivals hashes) {
        DeviceBuffer db = buffer.device().orElseThrow();
        MemorySegment host = buffer.writable();
        GpuProvider g = gpu();
        buffer.gpu().pinHost(g, db.device());
        for (int i = 0; i < infos.size(); i++) {
            TensorInfo info = infos.get(i);
            if (tensors.get(i).onDevice()) {
                // Down in pieces, each hashed on the pool while the next one is copied.
                for (long done = 0; done < info.length(); done += DOWN_PIECE) {
                    long n = Math.min(DOWN_PIECE, info.length() - done);
                    g.copyToHost(
                            db.device(), db.pointer(info.offset() + done, n), host.asSlice(info.offset() + done, n));
                    hashes.arrived(info.offset() + done, n);
                }
            } else {
                g.copyToDevice(
                        db.device(),
                        host.asSlice(info.offset(), info.length()),
                        db.pointer(info.offset(), info.length()));
            }
        }
    }

    /**
     * Background thread: the phash64 of each tensor, which GPU consumers check on their device. Computed where those
     * consumers read the version: on the GPU for a GPU-staged version, else on the hash pool from the host staging.
     */
    List<Future<Long>> phash64(StagingBuffer buffer, List<TensorInfo> infos, ExecutorService hashPool) {
        List<Future<Long>> out = new ArrayList<>(infos.size());
        Optional<DeviceBuffer> staged = buffer.device();
        if (staged.isPresent()) {
            DeviceBuffer db = staged.get();
            GpuProvider g = gpu();
            for (TensorInfo i : infos) {
                out.add(CompletableFuture.completedFuture(
                        g.hash64(db.device(), db.pointer(i.offset(), i.length()), i.length())));
            }
            return out;
        }
        MemorySegment data = buffer.data();
        for (TensorInfo i : infos) {
            MemorySegment slice = data.asSlice(i.offset(), i.length());
            out.add(hashPool.submit(() -> ParallelHash64.hash(slice)));
        }
        return out;
    }

    /** The GPU provider; throws {@code UNAVAILABLE} with the reason when CUDA does not work here. */
    private static GpuProvider gpu() {
        Optional<String> why = Providers.gpuUnavailableReason();
        if (why.isPresent()) {
            throw new ViperUnsupportedException(why.get());
        }
        return Providers.gpu().orElseThrow();
    }
}
