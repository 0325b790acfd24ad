package io.viper.transfer.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.viper.ViperConfig;
import io.viper.errors.ViperNotFoundException;
import io.viper.hash.ParallelHash64;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.TransportClient;
import io.viper.testing.TestStagedCheckpoint;
import java.lang.foreign.Arena;
import java.util.LinkedHashMap;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * CUDA IPC between two processes: the consumer maps the producer's GPU buffer and copies device to device under a
 * lease.
 */
@Tag("gpu")
class CudaIpcTwoProcessGpuTest {
    private static final long SIZE = (96L << 20) + 5;
    private static final long SEED = 99;

    @BeforeEach
    void gpu() {
        GpuTests.assumeGpu();
    }

    @Test
    void consumerCopiesTheProducersGpuBufferDeviceToDevice() throws Exception {
        try (TestStagedCheckpoint expected = new TestStagedCheckpoint("ipc", 1, SEED, SIZE);
                ChildProducer producer = new ChildProducer(SIZE, SEED);
                TransportClient client = new CudaIpcTransportProvider().openClient(ViperConfig.defaults());
                DeviceBuffer dst = GpuTests.GPU.allocate(0, SIZE);
                Arena arena = Arena.ofConfined()) {
            Manifest m = expected.manifest();
            Location loc = new Location(producer.uri, Tier.GPU);
            client.readToDevice(m, loc, List.of(new ByteRange(0, SIZE, 0)), dst);
            assertEquals(
                    ParallelHash64.toHex(ParallelHash64.hash(expected.data())),
                    ParallelHash64.toHex(GpuTests.GPU.hash64(0, dst.devicePointer(), SIZE)),
                    "device hash of the received model");
            GpuTests.assertSame(expected.data(), GpuTests.toHost(dst, 0, SIZE, arena), "received bytes");
            // A second read reuses the mapping; a sub-range lands where asked.
            client.readToDevice(m, loc, List.of(new ByteRange(1000, 4096, 8)), dst);
            GpuTests.assertSame(
                    expected.data().asSlice(1000, 4096), GpuTests.toHost(dst, 8, 4096, arena), "range read");
            assertArrayEquals(new long[] {0, 2}, producer.leases(), "both leases released after the copies");
            Manifest v2 = new Manifest("ipc", 2, "test", 0, new LinkedHashMap<>(), m.tensors(), List.of());
            assertThrows(
                    ViperNotFoundException.class,
                    () -> client.readToDevice(v2, loc, List.of(new ByteRange(0, 8, 0)), dst),
                    "an unknown version is refused as not found");
        }
    }
}
