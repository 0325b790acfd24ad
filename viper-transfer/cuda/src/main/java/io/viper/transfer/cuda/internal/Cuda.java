package io.viper.transfer.cuda.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperUnsupportedException;
import io.viper.hash.ParallelHash64;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Field;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import jcuda.CudaException;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUipcMemHandle;
import jcuda.driver.CUipcMem_flags;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;

/**
 * Every jcuda call of Viper goes through here: the driver probe, primary contexts, device memory, copies, pinned host
 * memory, IPC handles and the {@link ParallelHash64} kernel.
 *
 * <p>The probe runs once: jcuda's native library needs {@code libcuda.so.1}; without it the class {@code JCudaDriver}
 * fails to initialise with an {@link UnsatisfiedLinkError}, which is caught here and turned into the one-line reason
 * {@code "no CUDA driver/device: ..."}. Every other method first checks the probe and throws {@link ViperException}
 * ({@code UNAVAILABLE}) with that reason, so no linkage error ever leaves this class.
 *
 * <p>Thread-safe: each call makes the device's primary context current on the calling thread, and every copy or kernel
 * is complete when the method returns.
 */
public final class Cuda {
    /** Start of every reason why CUDA is not usable. */
    public static final String NO_CUDA = io.viper.spi.GpuProvider.NO_CUDA;
    /** Host copies of heap segments go through a native bounce buffer of this size. */
    private static final long BOUNCE = 8L << 20;

    private static final int HASH_THREADS = 256;
    /** {@code CU_MEMHOSTREGISTER_PORTABLE}: the pinning holds for every CUDA context. */
    private static final int CU_MEMHOSTREGISTER_PORTABLE = 1;

    private static final int HASH_MAX_BLOCKS = 4096;

    private static volatile Optional<String> probe;
    private static final Map<Integer, CUcontext> CONTEXTS = new HashMap<>();
    private static final Map<Integer, CUfunction[]> HASH_KERNELS = new HashMap<>();
    /**
     * Per device, the 8-byte device words the hash kernel sums into, reused: a cuMemAlloc and the synchronising
     * cuMemFree per call cost more than hashing a 64 MiB tensor. One per thread hashing at a time; they live as long as
     * the context, like the kernels.
     */
    private static final Map<Integer, ConcurrentLinkedQueue<DevPtr>> HASH_OUTS = new ConcurrentHashMap<>();

    private Cuda() {}

    /** Why CUDA cannot be used in this process, or empty when it can (probed once). */
    public static Optional<String> unavailableReason() {
        Optional<String> p = probe;
        if (p == null) {
            synchronized (Cuda.class) {
                p = probe;
                if (p == null) {
                    p = runProbe();
                    probe = p;
                }
            }
        }
        return p;
    }

    private static Optional<String> runProbe() {
        try {
            JCudaDriver.setExceptionsEnabled(true);
            JCudaDriver.cuInit(0);
            int[] n = new int[1];
            JCudaDriver.cuDeviceGetCount(n);
            if (n[0] == 0) {
                return Optional.of(NO_CUDA + "the CUDA driver reports no device");
            }
            return Optional.empty();
        } catch (LinkageError e) {
            return Optional.of(NO_CUDA + linkDetail(e));
        } catch (CudaException e) {
            return Optional.of(NO_CUDA + "cuInit failed: " + firstLine(e.getMessage()));
        } catch (RuntimeException e) {
            return Optional.of(NO_CUDA + e.getClass().getSimpleName() + ": " + firstLine(e.getMessage()));
        }
    }

    /** The line of jcuda's long loader message that says what is missing (e.g. libcuda.so.1). */
    static String linkDetail(Throwable e) {
        String all = String.valueOf(e.getMessage());
        for (String line : all.split("\n")) {
            int i = line.indexOf("cannot open shared object file");
            if (i >= 0) {
                int colon = line.lastIndexOf(": ", i - 3);
                return line.substring(colon < 0 ? 0 : colon + 2).trim() + " (jcuda "
                        + "12.6.0 needs the NVIDIA driver library)";
            }
        }
        return e.getClass().getSimpleName() + ": " + firstLine(all);
    }

    static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return (nl < 0 ? s : s.substring(0, nl)).trim();
    }

    /** Throws the unavailable reason as a {@link ViperException}. */
    public static void ensure() {
        Optional<String> why = unavailableReason();
        if (why.isPresent()) {
            throw new ViperUnsupportedException(why.get());
        }
    }

    /** Makes {@code device}'s primary context current on this thread. */
    public static void use(int device) {
        ensure();
        CUcontext ctx;
        synchronized (CONTEXTS) {
            ctx = CONTEXTS.get(device);
            if (ctx == null) {
                int n = deviceCount();
                if (device < 0 || device >= n) {
                    throw new ViperConfigException("CUDA device " + device + " does not exist (" + n + " visible)");
                }
                CUdevice dev = new CUdevice();
                call(() -> JCudaDriver.cuDeviceGet(dev, device), "cuDeviceGet");
                CUcontext c = new CUcontext();
                call(() -> JCudaDriver.cuDevicePrimaryCtxRetain(c, dev), "cuDevicePrimaryCtxRetain");
                CONTEXTS.put(device, c);
                ctx = c;
            }
        }
        CUcontext current = ctx;
        call(() -> JCudaDriver.cuCtxSetCurrent(current), "cuCtxSetCurrent");
    }

    /** Number of visible devices. */
    public static int deviceCount() {
        ensure();
        int[] n = new int[1];
        call(() -> JCudaDriver.cuDeviceGetCount(n), "cuDeviceGetCount");
        return n[0];
    }

    /** Free bytes on {@code device}. */
    public static long freeBytes(int device) {
        use(device);
        long[] free = new long[1];
        long[] total = new long[1];
        call(() -> JCudaDriver.cuMemGetInfo(free, total), "cuMemGetInfo");
        return free[0];
    }

    /** A device pointer object for a raw address. */
    public static CUdeviceptr at(long address) {
        return new CUdeviceptr().withByteOffset(address);
    }

    /** Allocates {@code bytes} on {@code device}; returns the address. */
    public static long alloc(int device, long bytes) {
        use(device);
        DevPtr p = new DevPtr();
        try {
            call(() -> JCudaDriver.cuMemAlloc(p, bytes), "cuMemAlloc of " + bytes + " bytes on device " + device);
        } catch (ViperException e) {
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE, e.getMessage() + " (" + freeBytes(device) + " bytes free)");
        }
        return p.address();
    }

    /** Frees memory from {@link #alloc}. */
    public static void free(int device, long address) {
        use(device);
        call(() -> JCudaDriver.cuMemFree(at(address)), "cuMemFree");
    }

    /** Host to device; {@code src} may be any segment (heap segments go through a bounce buffer). */
    public static void toDevice(int device, MemorySegment src, long dst) {
        use(device);
        long n = src.byteSize();
        if (n == 0) {
            return;
        }
        if (src.isNative()) {
            call(() -> JCudaDriver.cuMemcpyHtoD(at(dst), new HostPtr(src.address()), n), "cuMemcpyHtoD");
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment bounce = a.allocate(Math.min(BOUNCE, Math.max(1, n)), 64);
            for (long off = 0; off < n; off += bounce.byteSize()) {
                long len = Math.min(bounce.byteSize(), n - off);
                MemorySegment.copy(src, off, bounce, 0, len);
                long o = off;
                call(() -> JCudaDriver.cuMemcpyHtoD(at(dst + o), new HostPtr(bounce.address()), len), "cuMemcpyHtoD");
            }
        }
    }

    /** Device to host; fills all of {@code dst}. */
    public static void toHost(int device, long src, MemorySegment dst) {
        use(device);
        long n = dst.byteSize();
        if (n == 0) {
            return;
        }
        if (dst.isNative()) {
            if (dst.isReadOnly()) {
                throw new IllegalArgumentException("destination segment is read-only");
            }
            call(() -> JCudaDriver.cuMemcpyDtoH(new HostPtr(dst.address()), at(src), n), "cuMemcpyDtoH");
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment bounce = a.allocate(Math.min(BOUNCE, Math.max(1, n)), 64);
            for (long off = 0; off < n; off += bounce.byteSize()) {
                long len = Math.min(bounce.byteSize(), n - off);
                long o = off;
                call(() -> JCudaDriver.cuMemcpyDtoH(new HostPtr(bounce.address()), at(src + o), len), "cuMemcpyDtoH");
                MemorySegment.copy(bounce, 0, dst, off, len);
            }
        }
    }

    /** Device to device, complete on return. */
    public static void deviceToDevice(int device, long src, long dst, long bytes) {
        use(device);
        if (bytes == 0) {
            return;
        }
        call(() -> JCudaDriver.cuMemcpyDtoD(at(dst), at(src), bytes), "cuMemcpyDtoD");
        call(JCudaDriver::cuCtxSynchronize, "cuCtxSynchronize");
    }

    /** Page-locked host memory of {@code bytes} (for pipelined copies); free with {@link #freePinned}. */
    public static MemorySegment allocPinned(int device, long bytes) {
        use(device);
        HostPtr p = new HostPtr(0);
        call(() -> JCudaDriver.cuMemAllocHost(p, bytes), "cuMemAllocHost of " + bytes + " bytes");
        return MemorySegment.ofAddress(p.address()).reinterpret(bytes);
    }

    /** Frees memory from {@link #allocPinned}. */
    public static void freePinned(int device, MemorySegment pinned) {
        use(device);
        call(() -> JCudaDriver.cuMemFreeHost(new HostPtr(pinned.address())), "cuMemFreeHost");
    }

    /**
     * Page-locks existing native host memory ({@code cuMemHostRegister}, portable to every context) so that copies of
     * it run at DMA speed; undo with {@link #unregisterHost}.
     */
    public static void registerHost(int device, MemorySegment host) {
        use(device);
        if (!host.isNative()) {
            throw new IllegalArgumentException("only native memory can be pinned, not a heap segment");
        }
        if (host.byteSize() == 0) {
            return;
        }
        try {
            call(
                    () -> JCudaDriver.cuMemHostRegister(
                            new HostPtr(host.address()), host.byteSize(), CU_MEMHOSTREGISTER_PORTABLE),
                    "cuMemHostRegister of " + host.byteSize() + " bytes");
        } catch (ViperException e) {
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, e.getMessage());
        }
    }

    /** Unpins memory pinned by {@link #registerHost}. */
    public static void unregisterHost(int device, MemorySegment host) {
        use(device);
        if (host.byteSize() == 0) {
            return;
        }
        call(() -> JCudaDriver.cuMemHostUnregister(new HostPtr(host.address())), "cuMemHostUnregister");
    }

    /** The 64-byte IPC handle of the allocation at {@code address} (an allocation base). */
    public static byte[] ipcHandle(int device, long address) {
        use(device);
        CUipcMemHandle h = new CUipcMemHandle();
        call(() -> JCudaDriver.cuIpcGetMemHandle(h, at(address)), "cuIpcGetMemHandle");
        return handleBytes(h).clone();
    }

    /**
     * The bytes inside a {@link CUipcMemHandle}: jcuda keeps them in a private field with no accessor, and they must
     * cross the process boundary, so they are read by reflection (jcuda is on the class path, or an automatic module,
     * which opens its packages).
     */
    private static byte[] handleBytes(CUipcMemHandle h) {
        try {
            Field f = CUipcMemHandle.class.getDeclaredField("reserved");
            f.setAccessible(true);
            return (byte[]) f.get(h);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new ViperException(
                    ViperException.Reason.INTERNAL, "cannot access the bytes of a jcuda CUipcMemHandle: " + e);
        }
    }

    /** Maps another process's allocation into this one (on {@code device}'s context); returns its address here. */
    public static long ipcOpen(int device, byte[] handle) {
        use(device);
        CUipcMemHandle h = new CUipcMemHandle();
        byte[] bytes = handleBytes(h);
        System.arraycopy(handle, 0, bytes, 0, Math.min(handle.length, bytes.length));
        DevPtr p = new DevPtr();
        call(
                () -> JCudaDriver.cuIpcOpenMemHandle(p, h, CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                "cuIpcOpenMemHandle");
        return p.address();
    }

    /** Unmaps an address from {@link #ipcOpen}. */
    public static void ipcClose(int device, long address) {
        use(device);
        call(() -> JCudaDriver.cuIpcCloseMemHandle(at(address)), "cuIpcCloseMemHandle");
    }

    /** {@link ParallelHash64} of {@code length} bytes at {@code address}, on the device. */
    public static long hash64(int device, long address, long length) {
        use(device);
        long words = length >>> 3;
        long acc = 0;
        if (words > 0) {
            CUfunction[] k = kernels(device);
            CUfunction f = (address & 7) == 0 ? k[0] : k[1];
            ConcurrentLinkedQueue<DevPtr> outs = HASH_OUTS.computeIfAbsent(device, d -> new ConcurrentLinkedQueue<>());
            DevPtr polled = outs.poll();
            if (polled == null) {
                polled = new DevPtr();
                DevPtr fresh = polled;
                call(() -> JCudaDriver.cuMemAlloc(fresh, 8), "cuMemAlloc");
            }
            DevPtr out = polled;
            try {
                call(() -> JCudaDriver.cuMemsetD8(out, (byte) 0, 8), "cuMemsetD8");
                long blocks = Math.min(HASH_MAX_BLOCKS, Math.max(1, (words + HASH_THREADS - 1) / HASH_THREADS));
                Pointer params = Pointer.to(
                        Pointer.to(new long[] {address}),
                        Pointer.to(new long[] {words}),
                        Pointer.to(new long[] {out.address()}));
                call(
                        () -> JCudaDriver.cuLaunchKernel(
                                f, (int) blocks, 1, 1, HASH_THREADS, 1, 1, 0, null, params, null),
                        "cuLaunchKernel");
                call(JCudaDriver::cuCtxSynchronize, "cuCtxSynchronize");
                long[] result = new long[1];
                call(() -> JCudaDriver.cuMemcpyDtoH(Pointer.to(result), out, 8), "cuMemcpyDtoH");
                acc = result[0];
            } finally {
                outs.add(out);
            }
        }
        int rest = (int) (length & 7);
        if (rest > 0) {
            byte[] tail = new byte[rest];
            long src = address + (words << 3);
            call(() -> JCudaDriver.cuMemcpyDtoH(Pointer.to(tail), at(src), rest), "cuMemcpyDtoH");
            acc += ParallelHash64.tailTerm(length, MemorySegment.ofArray(tail));
        }
        return ParallelHash64.finish(acc, length);
    }

    private static CUfunction[] kernels(int device) {
        synchronized (HASH_KERNELS) {
            CUfunction[] k = HASH_KERNELS.get(device);
            if (k == null) {
                CUmodule module = new CUmodule();
                call(
                        () -> JCudaDriver.cuModuleLoadData(module, HashKernel.ptx()),
                        "cuModuleLoadData of the phash64 kernel");
                CUfunction aligned = new CUfunction();
                CUfunction bytes = new CUfunction();
                call(() -> JCudaDriver.cuModuleGetFunction(aligned, module, HashKernel.ALIGNED), "cuModuleGetFunction");
                call(() -> JCudaDriver.cuModuleGetFunction(bytes, module, HashKernel.UNALIGNED), "cuModuleGetFunction");
                k = new CUfunction[] {aligned, bytes};
                HASH_KERNELS.put(device, k);
            }
            return k;
        }
    }

    /** Runs a driver call; a {@link CudaException} becomes a one-line {@link ViperException}. */
    static void call(Runnable r, String what) {
        try {
            r.run();
        } catch (CudaException e) {
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER, what + " failed: " + firstLine(e.getMessage()));
        }
    }

    /** A device pointer whose address can be read back. */
    static final class DevPtr extends CUdeviceptr {
        long address() {
            return getNativePointer() + getByteOffset();
        }
    }

    /** A host pointer to a raw native address (no Java buffer behind it). */
    static final class HostPtr extends Pointer {
        HostPtr(long address) {
            super(address);
        }

        long address() {
            return getNativePointer() + getByteOffset();
        }
    }
}
