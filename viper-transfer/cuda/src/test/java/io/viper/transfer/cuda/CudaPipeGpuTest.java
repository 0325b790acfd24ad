package io.viper.transfer.cuda;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The pipelined cross-node path into GPU memory, from a GPU-staged and from a host-staged producer. */
@Tag("gpu")
class CudaPipeGpuTest {
    private static final long SIZE = (80L << 20) + 3;

    @BeforeEach
    void gpu() {
        GpuTests.assumeGpu();
    }

    @Test
    void chunksArriveInGpuMemoryFromBothKindsOfProducer() {
        GpuTests.readsIntoGpuMemoryFromBothKindsOfProducer(new CudaPipeTransportProvider(), SIZE);
    }
}
