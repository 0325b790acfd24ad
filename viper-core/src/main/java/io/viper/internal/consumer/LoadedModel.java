package io.viper.internal.consumer;

import io.viper.ModelLease;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.memory.LeakDetector;
import io.viper.spi.DeviceBuffer;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A verified model version in a consumer's memory (a receive buffer or a mapped PFS file), with a reference count: one
 * reference while it is the serving model, one per open lease. When the count reaches zero the memory is handed back
 * ({@code release}) and may be reused. A lease garbage-collected while open is reported by the {@link LeakDetector}.
 * Thread-safe.
 */
final class LoadedModel {
    private final Manifest manifest;
    private final Checkpoint checkpoint;
    private final DeviceBuffer device;
    /** The data section in host memory, scoped to this version; null for a model in GPU memory. */
    private final MemorySegment hostData;

    /** Whether {@link #hostData} is a mapping of the PFS's files (the page cache's), not memory of this consumer. */
    private final boolean mappedInPlace;

    private final AtomicInteger refs = new AtomicInteger(1);
    private final Runnable release;

    /** A model in GPU memory ({@code buffer} holds the data section); {@code release} frees it. */
    LoadedModel(Manifest manifest, DeviceBuffer buffer, Runnable release) {
        this.manifest = manifest;
        this.checkpoint = null;
        this.device = buffer;
        this.hostData = null;
        this.mappedInPlace = false;
        this.release = release;
    }

    /** A model in a host receive buffer of this consumer ({@code buffer}); {@code release} hands it back. */
    LoadedModel(Manifest manifest, MemorySegment buffer, Runnable release) {
        this(manifest, buffer, release, false);
    }

    /**
     * A model in host memory: a receive buffer, or, when {@code mappedInPlace}, the PFS's files mapped in place;
     * {@code release} hands it back or unmaps it.
     */
    LoadedModel(Manifest manifest, MemorySegment buffer, Runnable release, boolean mappedInPlace) {
        this.manifest = manifest;
        this.mappedInPlace = mappedInPlace;
        // A view scoped to this version: once released, stale tensors throw instead of reading a
        // buffer that a newer version may be filling.
        Arena view = Arena.ofShared();
        MemorySegment data = buffer.reinterpret(view, null);
        List<Tensor> tensors = new ArrayList<>(manifest.tensors().size());
        for (TensorEntry e : manifest.tensors()) {
            tensors.add(new Tensor(
                    e.info(), data.asSlice(e.info().offset(), e.info().length())));
        }
        this.checkpoint = Checkpoint.of(manifest.model(), manifest.version(), tensors, manifest.metadata());
        this.device = null;
        this.hostData = data;
        this.release = () -> {
            view.close();
            release.run();
        };
    }

    Manifest manifest() {
        return manifest;
    }

    long version() {
        return manifest.version();
    }

    /**
     * The data section in host memory, read-only by convention, or null for a model in GPU memory. Valid while the
     * caller holds a reference ({@link #tryRetain}); a delta load copies blocks from it.
     */
    MemorySegment hostData() {
        return hostData;
    }

    /** Whether the data section is the PFS's files mapped in place rather than memory of this consumer. */
    boolean mappedInPlace() {
        return mappedInPlace;
    }

    /**
     * The data section in GPU memory, or null for a model in host memory. Valid while the caller holds a reference
     * ({@link #tryRetain}); a delta load copies blocks from it on the device.
     */
    DeviceBuffer deviceData() {
        return device;
    }

    /** Takes a reference unless the model was already released. */
    boolean tryRetain() {
        while (true) {
            int n = refs.get();
            if (n <= 0) {
                return false;
            }
            if (refs.compareAndSet(n, n + 1)) {
                return true;
            }
        }
    }

    /** References held now: the serving slot's, if it still serves, and one per open lease. */
    int references() {
        return refs.get();
    }

    void releaseRef() {
        int n = refs.decrementAndGet();
        if (n == 0) {
            release.run();
        } else if (n < 0) {
            throw new IllegalStateException(
                    "model " + manifest.model() + " v" + manifest.version() + " released too often");
        }
    }

    ModelLease lease() {
        return new Lease();
    }

    private final class Lease implements ModelLease {
        private final AtomicBoolean closed = new AtomicBoolean();
        private final LeakDetector.Tracker leak =
                LeakDetector.track(this, "ModelLease on " + manifest.model() + " v" + manifest.version());

        @Override
        public long version() {
            return manifest.version();
        }

        @Override
        public Manifest manifest() {
            return manifest;
        }

        @Override
        public Tensor tensor(String name) {
            check();
            Tensor t = checkpoint.tensor(name);
            if (t == null) {
                throw new ViperNotFoundException(
                        "model " + manifest.model() + " v" + manifest.version() + " has no tensor '" + name + "'");
            }
            return t;
        }

        @Override
        public List<Tensor> tensors() {
            check();
            return checkpoint.tensors();
        }

        @Override
        public Checkpoint checkpoint() {
            check();
            return checkpoint;
        }

        @Override
        public Optional<DeviceBuffer> device() {
            if (closed.get()) {
                throw new IllegalStateException(
                        "lease on " + manifest.model() + " v" + manifest.version() + " is closed");
            }
            return Optional.ofNullable(device);
        }

        private void check() {
            if (closed.get()) {
                throw new IllegalStateException(
                        "lease on " + manifest.model() + " v" + manifest.version() + " is closed");
            }
            if (device != null) {
                throw new ViperConfigException("model " + manifest.model() + " v" + manifest.version()
                        + " is in GPU memory (viper.consumer.device=gpu): read it through ModelLease.device()");
            }
        }

        @Override
        public void close() {
            try {
                if (closed.compareAndSet(false, true)) {
                    if (leak != null) {
                        leak.close();
                    }
                    releaseRef();
                }
            } finally {
                // Reachable until untracked: else it could be reported as leaked while it closes.
                Reference.reachabilityFence(this);
            }
        }
    }
}
