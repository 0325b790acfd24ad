package io.viper.transfer.ucx.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import io.viper.spi.StagingAllocator;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * The memory a {@link UcxServer} serves: each exposed version registered with UCX (a copy in memory UCX allocated, the
 * staging buffer in place, or a staging buffer UCX allocated and registered once), and the read leases consumers take
 * on them ({@link #take}). Registrations are made and dropped on the {@link WorkerLoop}'s thread; the maps are guarded
 * by this object's monitor. The staged memory stays owned by the producer's staging cache: it is registered between
 * {@link #expose} and {@link #withdraw} only.
 */
final class UcxExposures {
    private static final System.Logger LOG = System.getLogger(UcxServer.class.getName());
    static final long LOOP_CALL_TIMEOUT_MS = 30_000;
    private static final AtomicLong EXPOSURE_IDS = new AtomicLong(new SecureRandom().nextLong() >>> 16);

    private record Key(String model, long version) {}

    /**
     * One exposed version: the registered memory consumers read ({@code address}, {@code size}), either the staging
     * buffer itself or a copy in UCX-allocated memory. {@code memory} is mapped and unmapped on the loop thread only.
     */
    static final class Exposure {
        final StagedCheckpoint staged;
        final long size;
        /** Unique per registration for this server's lifetime: consumers cache unpacked rkeys under it. */
        final long id = EXPOSURE_IDS.incrementAndGet();

        volatile long address;
        volatile UcpMemory memory;
        volatile byte[] rkey = new byte[0];
        /** The registration consumers cache their unpacked rkey under (an allocation's, when reused). */
        volatile long registrationId = id;
        /** Whether this exposure registered memory of its own (else it borrows a staging allocation's). */
        volatile boolean owned = true;

        Exposure(StagedCheckpoint staged, long size) {
            this.staged = staged;
            this.size = size;
        }
    }

    /**
     * A staging buffer UCX allocated and registered once; versions staged in it are exposed without a copy, under the
     * same registration id, so consumers keep its unpacked rkey across versions.
     */
    private final class Allocation implements StagingAllocator.Memory {
        final long id = EXPOSURE_IDS.incrementAndGet();
        final long address;
        final long size;
        final byte[] rkey;
        final MemorySegment segment;
        volatile UcpMemory memory;

        Allocation(UcpMemory memory, long size) {
            this.memory = memory;
            this.address = memory.getAddress();
            this.size = size;
            this.rkey = toBytes(memory.getRemoteKeyBuffer());
            this.segment = MemorySegment.ofAddress(address).reinterpret(size);
        }

        boolean contains(MemorySegment data) {
            return data.address() >= address && data.address() + data.byteSize() <= address + size;
        }

        @Override
        public MemorySegment segment() {
            return segment;
        }

        @Override
        public void close() {
            synchronized (UcxExposures.this) {
                if (!allocations.remove(this)) {
                    return;
                }
            }
            try {
                loop.call(
                        () -> {
                            UcpMemory m = memory;
                            memory = null;
                            if (m != null) {
                                m.deregister();
                            }
                            return null;
                        },
                        LOOP_CALL_TIMEOUT_MS);
            } catch (ViperClosedException | RetriableViperException e) {
                LOG.log(Level.DEBUG, () -> "ucx server: freeing a staging buffer skipped: " + e.getMessage());
            }
        }
    }

    private final UcxSettings settings;
    private final UcxMemoryMode mode;
    private final WorkerLoop loop;
    private final String name;
    /** Guarded by this. */
    private final Map<Key, Exposure> exposed = new HashMap<>();
    /** Staging buffers allocated through {@link #stagingAllocator()}; guarded by this. */
    private final List<Allocation> allocations = new ArrayList<>();
    /** Guarded by this. */
    private boolean closed;
    /**
     * Held shared by {@code expose} and {@code withdraw} while they register, copy into or unmap memory, and
     * exclusively by {@code close}, so that the context is never closed under a copy.
     */
    private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();

    /** The memory of the server {@code name}, registered on {@code loop}'s context as {@code mode} says. */
    UcxExposures(UcxSettings settings, UcxMemoryMode mode, WorkerLoop loop, String name) {
        this.settings = settings;
        this.mode = mode;
        this.loop = loop;
        this.name = name;
    }

    static byte[] toBytes(ByteBuffer b) {
        ByteBuffer d = b.duplicate();
        d.clear();
        byte[] out = new byte[d.remaining()];
        d.get(out);
        return out;
    }

    /**
     * Staging buffers in memory UCX allocates and registers once (unless {@code viper.ucx.copy=false}, where staged
     * buffers are registered in place): UCX 1.13 reads such memory between processes at memcpy speed, while a GET from
     * memory registered in place takes its slow software path.
     */
    Optional<StagingAllocator> stagingAllocator() {
        if (!settings.copyToUcxMemory() || mode.device()) {
            return Optional.empty();
        }
        return Optional.of(bytes -> {
            lifecycle.readLock().lock();
            try {
                synchronized (this) {
                    requireOpen();
                }
                Allocation a = loop.call(
                        () -> new Allocation(
                                loop.context()
                                        .memoryMap(
                                                new UcpMemMapParams().allocate().setLength(bytes)),
                                bytes),
                        LOOP_CALL_TIMEOUT_MS);
                synchronized (this) {
                    allocations.add(a);
                }
                return a;
            } catch (RuntimeException e) {
                if (e instanceof ViperException ve) {
                    throw ve;
                }
                throw new RetriableViperException(
                        ViperException.Reason.TRANSFER,
                        "ucx server: cannot allocate a staging buffer of " + bytes + " bytes: "
                                + UcxNative.oneLine(String.valueOf(e.getMessage())),
                        e);
            } finally {
                lifecycle.readLock().unlock();
            }
        });
    }

    /**
     * Registers {@code staged}'s data for RDMA: by default copies it into memory allocated by UCX
     * ({@link io.viper.transfer.ucx.UcxConfig#COPY}), else registers the staging buffer in place. Blocks the calling
     * (producer background) thread for the copy. In the GPU mode a version staged on the GPU is registered in place as
     * device memory (no copy); others are registered in place in host memory.
     */
    void expose(StagedCheckpoint staged) {
        Key key = new Key(staged.model(), staged.version());
        String what = key.model() + " v" + key.version();
        MemorySegment data = staged.data();
        Optional<DeviceBuffer> device = mode.device() ? staged.device() : Optional.empty();
        if (device.isPresent() && device.get().byteSize() < data.byteSize()) {
            throw new ViperConfigException("ucx server: the GPU staging buffer of " + what + " holds "
                    + device.get().byteSize() + " bytes, the version has " + data.byteSize());
        }
        if (device.isEmpty() && !data.isNative()) {
            throw new ViperConfigException("ucx server: staged data of " + what + " is not in native memory");
        }
        lifecycle.readLock().lock();
        try {
            synchronized (this) {
                requireOpen();
                Exposure old = exposed.get(key);
                if (old != null && old.staged == staged) {
                    return;
                }
            }
            Exposure e = new Exposure(staged, data.byteSize());
            Allocation home = null;
            synchronized (this) {
                for (Allocation a : allocations) {
                    if (a.contains(data)) {
                        home = a;
                    }
                }
            }
            if (device.isPresent() && e.size > 0) {
                registerInPlace(e, device.get().devicePointer(), mode.memoryType(), what + " (GPU staging)");
            } else if (mode.device() && e.size > 0) {
                registerInPlace(
                        e, data.address(), UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST, what + " (host staging)");
            } else if (home != null) {
                e.owned = false;
                e.address = data.address();
                e.rkey = home.rkey;
                e.registrationId = home.id;
            } else if (e.size > 0) {
                register(e, data, what);
            }
            Exposure old;
            synchronized (this) {
                old = exposed.put(key, e);
            }
            if (old != null) {
                LOG.log(
                        Level.DEBUG,
                        () -> "ucx server: " + what + " exposed again; replacing the earlier registration");
                deregister(List.of(old));
            }
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    private void register(Exposure e, MemorySegment data, String what) {
        if (!settings.copyToUcxMemory()) {
            registerInPlace(e, data.address(), UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST, what);
            return;
        }
        try {
            loop.call(
                    () -> {
                        UcpMemory m = loop.context()
                                .memoryMap(new UcpMemMapParams().allocate().setLength(e.size));
                        e.memory = m;
                        e.address = m.getAddress();
                        e.rkey = toBytes(m.getRemoteKeyBuffer());
                        return null;
                    },
                    LOOP_CALL_TIMEOUT_MS);
            // Views of at most 1 GiB: ByteBuffer capacities are ints.
            for (long off = 0; off < e.size; off += 1L << 30) {
                int len = (int) Math.min(1L << 30, e.size - off);
                MemorySegment.copy(
                        data, off, MemorySegment.ofBuffer(UcxUtils.getByteBufferView(e.address + off, len)), 0, len);
            }
        } catch (RuntimeException ex) {
            if (e.memory != null) {
                deregister(List.of(e));
            }
            if (ex instanceof ViperException ve) {
                throw ve;
            }
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER,
                    "ucx server: cannot allocate UCX memory for " + e.size + " bytes of " + what + ": "
                            + UcxNative.oneLine(String.valueOf(ex.getMessage())),
                    ex);
        }
    }

    /** Registers {@code e.size} bytes at {@code address} of {@code memoryType} where they are, on the loop thread. */
    private void registerInPlace(Exposure e, long address, int memoryType, String what) {
        try {
            loop.call(
                    () -> {
                        UcpMemMapParams params =
                                new UcpMemMapParams().setAddress(address).setLength(e.size);
                        // Host memory is left to UCX's own detection, as before the GPU mode existed.
                        UcpMemory m = loop.context()
                                .memoryMap(
                                        memoryType == UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST
                                                ? params
                                                : params.setMemoryType(memoryType));
                        e.memory = m;
                        e.address = m.getAddress();
                        e.rkey = toBytes(m.getRemoteKeyBuffer());
                        return null;
                    },
                    LOOP_CALL_TIMEOUT_MS);
        } catch (RuntimeException ex) {
            if (ex instanceof ViperException ve) {
                throw ve;
            }
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER,
                    "ucx server: cannot register " + e.size + " bytes of " + what + ": "
                            + UcxNative.oneLine(String.valueOf(ex.getMessage())),
                    ex);
        }
    }

    void withdraw(StagedCheckpoint staged) {
        Key key = new Key(staged.model(), staged.version());
        Exposure e;
        lifecycle.readLock().lock();
        try {
            synchronized (this) {
                e = exposed.get(key);
                if (e == null || e.staged != staged) {
                    return;
                }
                exposed.remove(key);
            }
            deregister(List.of(e));
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /** Deregisters on the loop thread and waits; a closed loop has released everything already. */
    private void deregister(List<Exposure> list) {
        if (list.stream().noneMatch(e -> e.owned && e.memory != null)) {
            return; // nothing registered of its own (in a staging buffer UCX allocated): no hand-off to the loop
        }
        try {
            loop.call(
                    () -> {
                        list.forEach(UcxExposures::deregisterInLoop);
                        return null;
                    },
                    LOOP_CALL_TIMEOUT_MS);
        } catch (ViperClosedException | RetriableViperException e) {
            LOG.log(Level.DEBUG, () -> "ucx server: deregistration skipped: " + e.getMessage());
        }
    }

    private static void deregisterInLoop(Exposure e) {
        if (e.owned && e.memory != null) {
            try {
                e.memory.deregister();
            } catch (RuntimeException ex) {
                LOG.log(Level.WARNING, "ucx server: deregistering " + e.size + " bytes failed: " + ex.getMessage(), ex);
            }
            e.memory = null;
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new ViperClosedException(name + " is closed");
        }
    }

    /** A lease taken on an exposure, or why none was ({@code lease} null). */
    record Taken(Exposure exposure, ReadLease lease, String refusal) {}

    /** Takes a read lease on the exposure of {@code model} v{@code version}, if it is exposed and not recycled. */
    Taken take(String model, long version) {
        Key key = new Key(model, version);
        String what = model + " v" + version;
        Exposure e;
        synchronized (this) {
            if (closed) {
                return new Taken(null, null, "producer is shutting down");
            }
            e = exposed.get(key);
        }
        if (e == null) {
            return new Taken(null, null, what + " is not served here");
        }
        ReadLease lease = e.staged.tryLease();
        if (lease == null) {
            return new Taken(null, null, what + " was recycled");
        }
        synchronized (this) {
            if (closed || exposed.get(key) != e) {
                closeQuietly(lease);
                return new Taken(null, null, closed ? "producer is shutting down" : what + " was withdrawn");
            }
        }
        return new Taken(e, lease, null);
    }

    /**
     * The server closes: waits for exposes and withdraws under way (later ones see it closed), refuses leases from now
     * on and returns every exposure, which {@link #releaseInLoop} unmaps.
     */
    List<Exposure> close() {
        synchronized (this) {
            closed = true;
        }
        lifecycle.writeLock().lock();
        try {
            synchronized (this) {
                List<Exposure> all = new ArrayList<>(exposed.values());
                exposed.clear();
                return all;
            }
        } finally {
            lifecycle.writeLock().unlock();
        }
    }

    /** On the loop thread, as it closes: unmaps {@code all} and every staging buffer UCX allocated. */
    void releaseInLoop(List<Exposure> all) {
        List<Allocation> allocs;
        synchronized (this) {
            allocs = new ArrayList<>(allocations);
            allocations.clear();
        }
        all.forEach(UcxExposures::deregisterInLoop);
        for (Allocation a : allocs) {
            UcpMemory m = a.memory;
            a.memory = null;
            if (m != null) {
                m.deregister();
            }
        }
    }

    static void closeQuietly(ReadLease lease) {
        try {
            lease.close();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "ucx server: closing a read lease failed: " + e.getMessage(), e);
        }
    }
}
