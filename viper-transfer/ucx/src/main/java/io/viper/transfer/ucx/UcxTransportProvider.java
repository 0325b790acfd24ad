package io.viper.transfer.ucx;

import io.viper.transfer.ucx.internal.UcxMemoryMode;
import io.viper.transfer.ucx.internal.UcxNative;
import io.viper.transfer.ucx.internal.UcxProviderBase;
import java.util.Optional;

/**
 * The {@code ucx://host:port} transport: host memory read with UCX RDMA GETs (shared memory between
 * processes on one host, RDMA across hosts), with a small TCP control channel for leases.
 *
 * <p>Producer ({@link #openServer}): binds the control channel to {@code ucx://host:port} (port 0
 * picks a free one) and registers each exposed checkpoint's memory with UCX; the staging cache keeps
 * owning that memory and must not recycle it before {@code withdraw}. Consumer ({@link #openClient}):
 * reads byte ranges into a native destination segment owned by the caller; {@code read} is
 * thread-safe and blocks the calling thread. Each side drives its UCX worker from one progress
 * thread of its own; callers never call UCX themselves.
 *
 * <p>Configuration ({@link io.viper.transfer.ucx.internal.UcxSettings}):
 * <ul>
 *   <li>{@code viper.transfer.timeout.ms} (default 60000): bound on one read; on the producer, how
 *       long a control connection may stay silent before it and its leases are closed;</li>
 *   <li>{@code viper.ucx.chunk.bytes} (default 64 MiB): largest single GET;</li>
 *   <li>{@code viper.ucx.inflight} (default 4): GETs outstanding per read;</li>
 *   <li>{@code viper.ucx.copy} (producer, default true): serve a copy of each exposed checkpoint in
 *       memory allocated by UCX. UCX 1.13 reads UCX-allocated memory between processes on one host
 *       through shared memory at memcpy speed, but memory registered in place only through its
 *       software RMA emulation, many times slower; the copy costs one memcpy at expose and the
 *       checkpoint's size again in shared memory per exposed version;</li>
 *   <li>{@code viper.ucx.rkey.cache} (consumer, default 2): unpacked remote keys kept per producer,
 *       so that repeated reads of one version skip re-attaching the producer's memory.</li>
 * </ul>
 * UCX itself honours its usual {@code UCX_*} environment variables (e.g. {@code UCX_TLS},
 * {@code UCX_LOG_LEVEL=info} to print the transports an endpoint uses).
 *
 * <p>Cheap to construct: the native libraries are probed, once per JVM, by {@link #unavailableReason()}.
 */
public final class UcxTransportProvider extends UcxProviderBase {
    /** Used by ServiceLoader; priority 0: preferred over tcp (10) in the host tier. */
    public UcxTransportProvider() {
        super(UcxMemoryMode.HOST, 0);
    }

    @Override
    public Optional<String> unavailableReason() {
        return UcxNative.unavailableReason();
    }
}
