package io.viper.transfer.ucx;

import io.viper.spi.TransportProvider;
import io.viper.testing.TransportConformanceSuite;

/** The transport conformance suite against ucx://; skipped where UCX is not installed. */
class UcxTransportConformanceTest extends TransportConformanceSuite {
    @Override
    protected TransportProvider provider() {
        return new UcxTransportProvider();
    }
}
