package io.viper.transfer.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.viper.transfer.ucx.UcxCudaTransportProvider;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * ucx-cuda with real CUDA memory: needs a GPU and a UCX built with CUDA support; skipped with the provider's reason
 * otherwise (Debian's UCX has no CUDA support, so then cuda-pipe is the path).
 */
@Tag("gpu")
class UcxCudaGpuTest {
    private static final long SIZE = (80L << 20) + 3;
    private final UcxCudaTransportProvider provider = new UcxCudaTransportProvider();

    @BeforeEach
    void gpuAndCudaAwareUcx() {
        GpuTests.assumeGpu();
        assumeTrue(
                provider.unavailableReason().isEmpty(),
                () -> "ucx-cuda unavailable: " + provider.unavailableReason().orElse(""));
    }

    @Test
    void gpuAndHostStagingAreReadIntoGpuMemoryByUcx() {
        GpuTests.readsIntoGpuMemoryFromBothKindsOfProducer(provider, SIZE);
    }
}
