package io.viper.transfer.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.viper.ViperConfig;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.ByteRange;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import io.viper.testing.DeviceStagedCheckpoint;
import io.viper.testing.TestStagedCheckpoint;
import io.viper.transfer.cuda.internal.Cuda;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.List;
import java.util.Optional;

/** Helpers of the {@code gpu}-tagged tests: the GPU check, host views of device memory, device-staged checkpoints. */
final class GpuTests {
    static final JCudaGpuProvider GPU = new JCudaGpuProvider();

    private GpuTests() {}

    /** Skips the test (with the reason) where CUDA does not work. */
    static void assumeGpu() {
        Optional<String> why = Cuda.unavailableReason();
        assumeTrue(why.isEmpty(), () -> why.orElse(""));
    }

    /** A host copy of {@code length} bytes at {@code offset} of {@code buf}. */
    static MemorySegment toHost(DeviceBuffer buf, long offset, long length, Arena arena) {
        MemorySegment host = arena.allocate(Math.max(1, length), 64).asSlice(0, length);
        GPU.copyToHost(buf.device(), buf.pointer(offset, length), host);
        return host;
    }

    static void assertSame(MemorySegment expected, MemorySegment actual, String what) {
        assertEquals(expected.byteSize(), actual.byteSize(), what + ": size");
        long mismatch = expected.mismatch(actual);
        assertEquals(-1, mismatch, what + ": first differing byte");
    }

    /** {@code host} staged on GPU {@code dev} too, with the same bytes, as the producer's GPU staging leaves it. */
    static DeviceStagedCheckpoint deviceStaged(TestStagedCheckpoint host, int dev) {
        DeviceBuffer device = GPU.allocate(dev, Math.max(1, host.data().byteSize()));
        GPU.copyToDevice(dev, host.data(), device.devicePointer());
        return new DeviceStagedCheckpoint(host, device);
    }

    /**
     * Reads a host-staged and a GPU-staged version of {@code size} bytes into GPU memory over {@code provider}, whole
     * and as two ranges crossing 16 MiB chunk boundaries, and checks the bytes and that every lease was released.
     */
    static void readsIntoGpuMemoryFromBothKindsOfProducer(TransportProvider provider, long size) {
        try (TestStagedCheckpoint hostOnly = new TestStagedCheckpoint(provider.scheme(), 1, 5, size);
                DeviceStagedCheckpoint onGpu =
                        deviceStaged(new TestStagedCheckpoint(provider.scheme(), 2, 6, size), 0);
                TransportServer server =
                        provider.openServer(URI.create(provider.scheme() + "://127.0.0.1:0"), ViperConfig.defaults());
                TransportClient client = provider.openClient(ViperConfig.defaults());
                DeviceBuffer dst = GPU.allocate(0, size);
                Arena arena = Arena.ofConfined()) {
            server.expose(hostOnly);
            server.expose(onGpu);
            Location loc = server.location();
            for (TestStagedCheckpoint s : List.of(hostOnly, onGpu.host())) {
                Manifest m = s.manifest();
                client.readToDevice(m, loc, List.of(new ByteRange(0, size, 0)), dst);
                assertSame(s.data(), toHost(dst, 0, size, arena), "v" + m.version() + " whole");
                long a = (16L << 20) - 10;
                client.readToDevice(m, loc, List.of(new ByteRange(a, 40, 0), new ByteRange(1, (33L << 20), 40)), dst);
                assertSame(s.data().asSlice(a, 40), toHost(dst, 0, 40, arena), "v" + m.version() + " range 1");
                assertSame(
                        s.data().asSlice(1, 33L << 20),
                        toHost(dst, 40, 33L << 20, arena),
                        "v" + m.version() + " range 2");
            }
            assertEquals(0, hostOnly.openLeases() + onGpu.host().openLeases(), "leases released");
        }
    }
}
