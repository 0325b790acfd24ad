package io.viper.transfer.ucx.internal;

import io.viper.ViperConfig;
import io.viper.auth.ConnectionGate;
import io.viper.errors.ViperException;
import io.viper.errors.ViperUnsupportedException;
import io.viper.manifest.Location;
import io.viper.net.HostPort;
import io.viper.spi.StagedCheckpoint;
import io.viper.spi.StagingAllocator;
import io.viper.spi.TransportServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.URI;
import java.nio.channels.ServerSocketChannel;
import java.util.List;
import java.util.Optional;

/**
 * Producer side of the ucx transport. Registers each exposed checkpoint's memory with UCX (once per exposed version)
 * and answers lease requests on a TCP control channel with the worker address, the memory address and the packed rkey;
 * consumers then read the bytes with RDMA GETs, which need no work from this side.
 *
 * <p>Threads: one acceptor thread; one platform thread per control connection ({@link ControlServer}); one UCX progress
 * thread ({@link WorkerLoop}) that owns the context, the worker and every registration ({@link UcxExposures}). The
 * staged memory stays owned by the producer's staging cache; this server only registers it between {@link #expose} and
 * {@link #withdraw}.
 */
public final class UcxServer implements TransportServer {
    /**
     * How long {@code close} keeps memory registered after closing connections that held leases: UCX 1.13 crashes a
     * consumer that unpacks the rkey of memory already unmapped, and a consumer checks its connection right before
     * unpacking.
     */
    private static final long UNMAP_GRACE_MS = 1_000;

    private final Location location;
    private final WorkerLoop loop;
    private final UcxExposures exposures;
    private final ControlServer control;
    /** Guarded by this. */
    private boolean closed;

    private UcxServer(
            UcxSettings settings,
            UcxMemoryMode mode,
            ServerSocketChannel serverSocket,
            Location location,
            WorkerLoop loop,
            byte[] workerAddress,
            ConnectionGate limits) {
        this.location = location;
        this.loop = loop;
        this.exposures = new UcxExposures(settings, mode, loop, "ucx server " + location.uri());
        this.control = new ControlServer(settings, serverSocket, limits, location, workerAddress, exposures);
    }

    /**
     * Binds the control channel to {@code bind} ({@code ucx://host:port}, port 0 for any) and starts the UCX worker.
     */
    public static UcxServer open(URI bind, ViperConfig config) {
        return open(bind, config, UcxMemoryMode.HOST);
    }

    /** As {@link #open(URI, ViperConfig)}, exposing the memory {@code mode} says under its scheme. */
    public static UcxServer open(URI bind, ViperConfig config, UcxMemoryMode mode) {
        UcxSettings settings = UcxSettings.from(config);
        HostPort address = HostPort.parse(bind, mode.scheme(), true);
        InetSocketAddress socketAddress = address.resolve();
        ConnectionGate limits =
                ConnectionGate.forServer(config, mode.scheme(), socketAddress.getAddress(), ControlProtocol.MAX_FRAME);
        ServerSocketChannel ss;
        int port;
        try {
            ss = ServerSocketChannel.open();
            ss.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            ss.bind(socketAddress, 128);
            port = ((InetSocketAddress) ss.getLocalAddress()).getPort();
        } catch (IOException e) {
            throw new ViperException(
                    ViperException.Reason.IO, "ucx server: cannot bind " + bind + ": " + e.getMessage(), e);
        }
        WorkerLoop loop = null;
        try {
            Location location = new Location(address.withPort(port).advertised().uri(mode.scheme()), mode.tier());
            loop = new WorkerLoop("viper-ucx-server-" + port, UcxNative.serverParams(socketAddress.getAddress()));
            WorkerLoop l = loop;
            byte[] worker =
                    loop.call(() -> UcxExposures.toBytes(l.worker().getAddress()), UcxExposures.LOOP_CALL_TIMEOUT_MS);
            return new UcxServer(settings, mode, ss, location, loop, worker, limits);
        } catch (RuntimeException | LinkageError e) {
            if (loop != null) {
                loop.close(() -> {}, 5_000);
            }
            try {
                ss.close();
            } catch (IOException ignored) {
                // reporting the first failure
            }
            if (e instanceof ViperException ve) {
                throw ve;
            }
            throw new ViperUnsupportedException(
                    "ucx server: cannot start UCX: " + UcxNative.oneLine(String.valueOf(e.getMessage())), e);
        }
    }

    @Override
    public Location location() {
        return location;
    }

    /**
     * Staging buffers in memory UCX allocates and registers once (unless {@code viper.ucx.copy=false}, where staged
     * buffers are registered in place): UCX 1.13 reads such memory between processes at memcpy speed, while a GET from
     * memory registered in place takes its slow software path.
     */
    @Override
    public Optional<StagingAllocator> stagingAllocator() {
        return exposures.stagingAllocator();
    }

    /**
     * Registers {@code staged}'s data for RDMA: by default copies it into memory allocated by UCX
     * ({@link io.viper.transfer.ucx.UcxConfig#COPY}), else registers the staging buffer in place. Blocks the calling
     * (producer background) thread for the copy. In the GPU mode a version staged on the GPU is registered in place as
     * device memory (no copy); others are registered in place in host memory.
     */
    @Override
    public void expose(StagedCheckpoint staged) {
        exposures.expose(staged);
    }

    @Override
    public void withdraw(StagedCheckpoint staged) {
        exposures.withdraw(staged);
    }

    /**
     * Stops serving: closes the control channel and every connection (and so every lease), then, after a grace period
     * of one second if leases were open, unmaps the memory and closes UCX.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        List<UcxExposures.Exposure> all = exposures.close();
        boolean leased = control.close();
        if (leased && all.stream().anyMatch(e -> e.size > 0)) {
            try {
                Thread.sleep(UNMAP_GRACE_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        control.awaitAcceptor();
        loop.close(() -> exposures.releaseInLoop(all), UcxExposures.LOOP_CALL_TIMEOUT_MS);
    }
}
