package io.viper.transfer.pfs;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.manifest.Tier;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import io.viper.transfer.pfs.internal.FileTransportClient;
import java.net.URI;
import java.util.Objects;
import java.util.Optional;

/**
 * The {@code file://} transport: consumers read checkpoints straight from the safetensors files of the PFS repository
 * ({@link PfsRepositoryProvider}), memory-mapped, or serve from the mapping without a copy
 * ({@link TransportClient#map}). Tier {@link Tier#PFS}, priority 100, available everywhere. Found with
 * {@link java.util.ServiceLoader}.
 *
 * <p>There is no {@code file://} server. The producer makes a version readable from the PFS by storing it in the
 * repository ({@link io.viper.spi.CheckpointRepository#store}), which returns the file location it then announces; a
 * transport server that also wrote the files would duplicate that write and its retention with a second owner of the
 * same directories. {@link #openServer} therefore refuses with a {@link ViperConfigException}, so that a
 * {@code file://} URI put among the producer's transport bind addresses is reported as the configuration mistake it is.
 */
public final class FileTransportProvider implements TransportProvider {
    /** The provider; cheap, as ServiceLoader requires. */
    public FileTransportProvider() {}

    @Override
    public String scheme() {
        return "file";
    }

    @Override
    public Tier tier() {
        return Tier.PFS;
    }

    /** 100: any host or GPU transport is preferred when it can be used. */
    @Override
    public int priority() {
        return 100;
    }

    /** Always empty: reading files needs no native library. */
    @Override
    public Optional<String> unavailableReason() {
        return Optional.empty();
    }

    /**
     * Always throws {@link ViperConfigException}: the PFS repository, not a transport server, serves file:// (see the
     * class comment).
     */
    @Override
    public TransportServer openServer(URI bind, ViperConfig config) {
        throw new ViperConfigException(
                "cannot bind '" + bind + "': file:// is served by the PFS repository (RepositoryProvider 'file', "
                        + "CheckpointRepository.store), not a transport server");
    }

    @Override
    public TransportClient openClient(ViperConfig config) {
        Objects.requireNonNull(config, "config");
        return new FileTransportClient();
    }
}
