package io.viper.transfer.ucx;

import io.viper.transfer.ucx.internal.UcxMemoryMode;
import io.viper.transfer.ucx.internal.UcxNative;
import io.viper.transfer.ucx.internal.UcxProviderBase;
import java.util.Optional;

/**
 * The {@code ucx://host:port} transport: host memory read with UCX RDMA GETs (shared memory between processes on one
 * host, RDMA across hosts), with a small TCP control channel for leases.
 *
 * <p>Producer ({@link #openServer}): binds the control channel to {@code ucx://host:port} (port 0 picks a free one) and
 * registers each exposed checkpoint's memory with UCX; the staging cache keeps owning that memory and must not recycle
 * it before {@code withdraw}. Consumer ({@link #openClient}): reads byte ranges into a native destination segment owned
 * by the caller; {@code read} is thread-safe and blocks the calling thread. Each side drives its UCX worker from one
 * progress thread of its own; callers never call UCX themselves.
 *
 * <p>Configuration: the keys of {@link UcxConfig} ({@code viper.ucx.*}), and core's {@code viper.transfer.timeout.ms}:
 * bound on one read; on the producer, how long a control connection may stay silent before it and its leases are
 * closed. UCX itself honours its usual {@code UCX_*} environment variables (e.g. {@code UCX_TLS},
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
