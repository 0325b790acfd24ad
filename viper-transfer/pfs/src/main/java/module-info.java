/**
 * The {@code file://} transport and the PFS checkpoint repository: versions as safetensors files under a shared root,
 * written crash-safely. No native dependency.
 */
module io.viper.transfer.pfs {
    requires io.viper.core;
    requires jdk.unsupported; // com.sun.nio.file.ExtendedOpenOption.DIRECT: O_DIRECT writes

    exports io.viper.transfer.pfs;

    provides io.viper.spi.TransportProvider with
            io.viper.transfer.pfs.FileTransportProvider;
    provides io.viper.spi.RepositoryProvider with
            io.viper.transfer.pfs.PfsRepositoryProvider;
}
