package io.viper.testing;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperUnsupportedException;
import io.viper.hash.ParallelHash64;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A GPU provider whose "device memory" is native host memory (a device pointer is the address), for testing the GPU
 * paths of the producer and consumer without a GPU. Disabled by default (then it reports "no CUDA driver/device: fake
 * GPU disabled", so real providers win); tests call {@link #enable(long)} and {@link #disable()}. One device, 0.
 */
public final class FakeGpuProvider implements GpuProvider {
    private static final AtomicBoolean ENABLED = new AtomicBoolean();
    private static final AtomicLong CAPACITY = new AtomicLong();
    private static final AtomicLong USED = new AtomicLong();
    private static final Map<Long, Arena> LIVE = new ConcurrentHashMap<>();
    private static final AtomicLong PINNED = new AtomicLong();
    private static final AtomicBoolean REFUSE_PINNING = new AtomicBoolean();

    /** Turns the fake GPU on with {@code capacity} bytes of device memory. */
    public static void enable(long capacity) {
        CAPACITY.set(capacity);
        ENABLED.set(true);
    }

    /** Turns it off (allocations stay valid until closed). */
    public static void disable() {
        ENABLED.set(false);
    }

    /** Device bytes allocated and not yet freed. */
    public static long used() {
        return USED.get();
    }

    /** Host bytes pinned with {@link #pinHost} and not yet unpinned. */
    public static long pinnedBytes() {
        return PINNED.get();
    }

    /** Makes {@link #pinHost} fail as a driver does when it refuses to pin (memory limits). */
    public static void refusePinning(boolean refuse) {
        REFUSE_PINNING.set(refuse);
    }

    /** A view of {@code length} bytes of fake device memory at {@code pointer}. */
    public static MemorySegment at(long pointer, long length) {
        return MemorySegment.ofAddress(pointer).reinterpret(length);
    }

    private static void check() {
        if (!ENABLED.get()) {
            throw new ViperUnsupportedException("no CUDA driver/device: fake GPU disabled");
        }
    }

    @Override
    public String name() {
        return "fake";
    }

    @Override
    public Optional<String> unavailableReason() {
        return ENABLED.get() ? Optional.empty() : Optional.of("no CUDA driver/device: fake GPU disabled");
    }

    @Override
    public int deviceCount() {
        check();
        return 1;
    }

    @Override
    public long freeBytes(int device) {
        check();
        return Math.max(0, CAPACITY.get() - USED.get());
    }

    @Override
    public DeviceBuffer allocate(int device, long bytes) {
        check();
        if (device != 0) {
            throw new ViperConfigException("CUDA device " + device + " does not exist (1 visible)");
        }
        if (USED.addAndGet(bytes) > CAPACITY.get()) {
            USED.addAndGet(-bytes);
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE, "cuMemAlloc of " + bytes + " bytes failed: out of memory");
        }
        Arena arena = Arena.ofShared();
        long address = arena.allocate(bytes, 256).address();
        LIVE.put(address, arena);
        AtomicBoolean closed = new AtomicBoolean();
        return new DeviceBuffer() {
            @Override
            public int device() {
                return 0;
            }

            @Override
            public long devicePointer() {
                return address;
            }

            @Override
            public long byteSize() {
                return bytes;
            }

            @Override
            public void close() {
                if (closed.compareAndSet(false, true)) {
                    LIVE.remove(address).close();
                    USED.addAndGet(-bytes);
                }
            }
        };
    }

    @Override
    public void copyToDevice(int device, MemorySegment src, long dstPointer) {
        check();
        MemorySegment.copy(src, 0, at(dstPointer, src.byteSize()), 0, src.byteSize());
    }

    @Override
    public void copyToHost(int device, long srcPointer, MemorySegment dst) {
        check();
        MemorySegment.copy(at(srcPointer, dst.byteSize()), 0, dst, 0, dst.byteSize());
    }

    @Override
    public void copyDeviceToDevice(int device, long srcPointer, long dstPointer, long bytes) {
        check();
        MemorySegment.copy(at(srcPointer, bytes), 0, at(dstPointer, bytes), 0, bytes);
    }

    @Override
    public long hash64(int device, long pointer, long length) {
        check();
        return ParallelHash64.hash(at(pointer, length));
    }

    @Override
    public PinnedHost pinHost(int device, MemorySegment host) {
        check();
        if (!host.isNative()) {
            throw new IllegalArgumentException("only native memory can be pinned, not a heap segment");
        }
        if (REFUSE_PINNING.get()) {
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE,
                    "cuMemHostRegister of " + host.byteSize() + " bytes failed: CUDA_ERROR_OUT_OF_MEMORY");
        }
        PINNED.addAndGet(host.byteSize());
        return PinnedHost.of(host, () -> PINNED.addAndGet(-host.byteSize()));
    }
}
