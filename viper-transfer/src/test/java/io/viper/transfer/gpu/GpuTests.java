package io.viper.transfer.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.viper.manifest.Manifest;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import io.viper.testing.TestStagedCheckpoint;
import io.viper.transfer.gpu.internal.Cuda;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/** Helpers of the {@code gpu}-tagged tests: the GPU check, host views of device memory, device-staged checkpoints. */
final class GpuTests {
    static final JCudaGpuProvider GPU = new JCudaGpuProvider();

    private GpuTests() {
    }

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

    /** A test checkpoint whose bytes are also in GPU memory, as the producer's GPU staging leaves them. */
    static final class DeviceStaged implements StagedCheckpoint, AutoCloseable {
        final TestStagedCheckpoint host;
        final DeviceBuffer device;

        DeviceStaged(TestStagedCheckpoint host, int dev) {
            this.host = host;
            this.device = GPU.allocate(dev, Math.max(1, host.data().byteSize()));
            GPU.copyToDevice(dev, host.data(), device.devicePointer());
        }

        @Override
        public String model() {
            return host.model();
        }

        @Override
        public long version() {
            return host.version();
        }

        @Override
        public Manifest manifest() {
            return host.manifest();
        }

        @Override
        public MemorySegment data() {
            return host.data();
        }

        @Override
        public Optional<DeviceBuffer> device() {
            return Optional.of(device);
        }

        @Override
        public ReadLease tryLease() {
            return host.tryLease();
        }

        @Override
        public void close() {
            device.close();
            host.close();
        }
    }
}
