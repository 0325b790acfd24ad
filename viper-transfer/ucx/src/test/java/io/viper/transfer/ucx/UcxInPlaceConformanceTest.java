package io.viper.transfer.ucx;

import io.viper.ViperConfig;
import io.viper.spi.TransportProvider;
import io.viper.testing.TransportConformanceSuite;
import java.util.Map;

/**
 * The conformance suite with the producer registering staging buffers in place ({@code viper.ucx.copy=false}) instead
 * of serving copies in UCX-allocated memory.
 */
class UcxInPlaceConformanceTest extends TransportConformanceSuite {
    @Override
    protected TransportProvider provider() {
        return new UcxTransportProvider();
    }

    @Override
    protected ViperConfig config() {
        return ViperConfig.of(Map.of("viper.ucx.copy", "false"));
    }
}
