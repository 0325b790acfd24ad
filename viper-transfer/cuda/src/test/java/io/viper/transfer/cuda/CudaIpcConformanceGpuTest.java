package io.viper.transfer.cuda;

import io.viper.spi.TransportProvider;
import io.viper.testing.TransportConformanceSuite;
import org.junit.jupiter.api.Tag;

/** The transport conformance suite over cuda-ipc (host-memory reads, producer in this process). */
@Tag("gpu")
class CudaIpcConformanceGpuTest extends TransportConformanceSuite {
    @Override
    protected TransportProvider provider() {
        return new CudaIpcTransportProvider();
    }
}
