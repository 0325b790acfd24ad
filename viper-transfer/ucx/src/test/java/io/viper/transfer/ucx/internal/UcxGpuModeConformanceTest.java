package io.viper.transfer.ucx.internal;

import io.viper.spi.TransportProvider;
import io.viper.testing.TransportConformanceSuite;

/**
 * The conformance suite over the ucx-cuda code (GPU mode) with host-staged checkpoints, which that mode registers in
 * place in host memory.
 */
class UcxGpuModeConformanceTest extends TransportConformanceSuite {
    @Override
    protected TransportProvider provider() {
        return new FakeGpuUcxTransportProvider();
    }
}
