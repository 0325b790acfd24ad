/**
 * Viper's API and SPI. Imports no transport library: transports and notifiers are found with
 * {@link java.util.ServiceLoader} and chosen by URI scheme.
 */
@SuppressWarnings("requires-transitive-automatic") // Micrometer's core jar names its module only in its manifest
module io.viper.core {
    requires transitive java.logging;
    requires com.fasterxml.jackson.databind;
    requires transitive micrometer.core;

    exports io.viper;
    exports io.viper.auth;
    exports io.viper.config;
    exports io.viper.errors;
    exports io.viper.hash;
    exports io.viper.manifest;
    exports io.viper.net;
    exports io.viper.spi;
    exports io.viper.format;
    exports io.viper.memory;
    exports io.viper.tensor;

    uses io.viper.spi.TransportProvider;
    uses io.viper.spi.RepositoryProvider;
    uses io.viper.spi.NotifierProvider;
    uses io.viper.spi.GpuProvider;
}
