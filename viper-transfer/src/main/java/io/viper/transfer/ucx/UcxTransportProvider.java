package io.viper.transfer.ucx;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.manifest.Tier;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import io.viper.transfer.ucx.internal.UcxClient;
import io.viper.transfer.ucx.internal.UcxNative;
import io.viper.transfer.ucx.internal.UcxServer;
import io.viper.transfer.ucx.internal.UcxSettings;
import java.net.URI;
import java.util.Map;
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
public final class UcxTransportProvider implements TransportProvider {
    /** Used by ServiceLoader. */
    public UcxTransportProvider() {
    }

    @Override
    public String scheme() {
        return "ucx";
    }

    @Override
    public Tier tier() {
        return Tier.HOST;
    }

    /** 0: preferred over tcp (10) in the host tier. */
    @Override
    public int priority() {
        return 0;
    }

    @Override
    public Optional<String> unavailableReason() {
        return UcxNative.unavailableReason();
    }

    /**
     * Starts the producer side bound to {@code bind}. Throws {@link ViperConfigException} for a bad URI
     * or configuration value, and {@link ViperException} ({@code UNAVAILABLE}) where UCX does not work.
     */
    @Override
    public TransportServer openServer(URI bind, Map<String, String> config) {
        UcxSettings.from(config);
        UcxSettings.parseAddress(bind, true);
        requireAvailable();
        return UcxServer.open(bind, config);
    }

    /** Starts the consumer side; errors as for {@link #openServer}. */
    @Override
    public TransportClient openClient(Map<String, String> config) {
        UcxSettings.from(config);
        requireAvailable();
        return UcxClient.open(config);
    }

    private void requireAvailable() {
        Optional<String> reason = unavailableReason();
        if (reason.isPresent()) {
            throw new ViperException(ViperException.Reason.UNAVAILABLE, "ucx transport unavailable: " + reason.get());
        }
    }
}
