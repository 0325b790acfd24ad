package io.viper.transfer.ucx.internal;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import org.openucx.jucx.ucp.UcpRemoteKey;

/**
 * UCX's {@code ucp_rkey_ptr}, which jucx does not expose: where the memory behind a remote key is shared memory of a
 * process on this host that UCX has attached, the local address of a remote one, so that a consumer copies from the
 * producer's memory itself. Called through {@code java.lang.foreign} on the {@code libucp.so.0} jucx already loaded.
 * Stateless after its lookup, which runs once per JVM; any thread.
 */
final class RkeyPointer {
    private static final System.Logger LOG = System.getLogger(RkeyPointer.class.getName());
    /**
     * {@code ucs_status_t ucp_rkey_ptr(ucp_rkey_h rkey, uint64_t raddr, void **addr_p)}; null where libucp lacks it.
     */
    private static final MethodHandle RKEY_PTR = lookup();

    private RkeyPointer() {}

    private static MethodHandle lookup() {
        try {
            Linker linker = Linker.nativeLinker();
            return SymbolLookup.libraryLookup("libucp.so.0", Arena.global())
                    .find("ucp_rkey_ptr")
                    .map(f -> linker.downcallHandle(
                            f,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.ADDRESS,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.ADDRESS)))
                    .orElse(null);
        } catch (RuntimeException | LinkageError e) {
            LOG.log(Level.DEBUG, "ucp_rkey_ptr is not available; reads use RDMA GETs", e);
            return null;
        }
    }

    /**
     * The local address of {@code remoteAddress} behind {@code key}, or 0 where UCX cannot map it (another host, memory
     * it reaches only by RDMA, or no {@code ucp_rkey_ptr}). Valid while the key stays unpacked and the producer keeps
     * the memory, i.e. while the reader holds its lease.
     */
    static long localAddress(UcpRemoteKey key, long remoteAddress) {
        if (RKEY_PTR == null) {
            return 0;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int status = (int) RKEY_PTR.invokeExact(MemorySegment.ofAddress(key.getNativeId()), remoteAddress, out);
            return status == 0 ? out.get(ValueLayout.ADDRESS, 0).address() : 0;
        } catch (Throwable e) {
            LOG.log(Level.DEBUG, "ucp_rkey_ptr failed; the read uses RDMA GETs", e);
            return 0;
        }
    }
}
