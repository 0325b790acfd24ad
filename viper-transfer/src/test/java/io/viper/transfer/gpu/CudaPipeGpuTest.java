package io.viper.transfer.gpu;

import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.ByteRange;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportServer;
import io.viper.testing.TestStagedCheckpoint;
import java.lang.foreign.Arena;
import java.net.URI;
import java.util.List;
import java.util.Map;
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
        CudaPipeTransportProvider p = new CudaPipeTransportProvider();
        try (TestStagedCheckpoint hostOnly = new TestStagedCheckpoint("pipe", 1, 5, SIZE);
             GpuTests.DeviceStaged onGpu = new GpuTests.DeviceStaged(new TestStagedCheckpoint("pipe", 2, 6, SIZE), 0);
             TransportServer server = p.openServer(URI.create("cuda-pipe://127.0.0.1:0"), Map.of());
             TransportClient client = p.openClient(Map.of());
             DeviceBuffer dst = GpuTests.GPU.allocate(0, SIZE);
             Arena arena = Arena.ofConfined()) {
            server.expose(hostOnly);
            server.expose(onGpu);
            Location loc = server.location();
            for (TestStagedCheckpoint s : List.of(hostOnly, onGpu.host)) {
                Manifest m = s.manifest();
                client.readToDevice(m, loc, List.of(new ByteRange(0, SIZE, 0)), dst);
                GpuTests.assertSame(s.data(), GpuTests.toHost(dst, 0, SIZE, arena), "v" + m.version() + " whole");
                // Two ranges, crossing chunk boundaries, placed back to back.
                long a = (16L << 20) - 10;
                client.readToDevice(m, loc, List.of(new ByteRange(a, 40, 0), new ByteRange(1, (33L << 20), 40)), dst);
                GpuTests.assertSame(s.data().asSlice(a, 40), GpuTests.toHost(dst, 0, 40, arena), "v" + m.version() + " range 1");
                GpuTests.assertSame(s.data().asSlice(1, 33L << 20), GpuTests.toHost(dst, 40, 33L << 20, arena), "v" + m.version() + " range 2");
            }
            org.junit.jupiter.api.Assertions.assertEquals(0, hostOnly.openLeases() + onGpu.host.openLeases(), "leases released");
        }
    }
}
