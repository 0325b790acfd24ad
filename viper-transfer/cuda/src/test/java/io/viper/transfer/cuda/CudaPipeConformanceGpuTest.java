package io.viper.transfer.cuda;

import io.viper.spi.TransportProvider;
import io.viper.testing.TransportConformanceSuite;
import org.junit.jupiter.api.Tag;

/** The transport conformance suite over cuda-pipe (host-memory reads over TCP). */
@Tag("gpu")
class CudaPipeConformanceGpuTest extends TransportConformanceSuite {
    @Override
    protected TransportProvider provider() {
        return new CudaPipeTransportProvider();
    }
}
