package io.viper.testing;

import io.viper.manifest.Manifest;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * A {@link TestStagedCheckpoint} whose version is also staged in GPU memory, as the producer's GPU staging leaves it:
 * {@link #device()} is {@code deviceCopy}. Owns both and closes them, the device buffer first. The device bytes are
 * whatever the caller put there (a test may make them differ from the host bytes to see which copy a transport served).
 *
 * @param host the host copy, leases and manifest
 * @param deviceCopy the GPU staging copy
 */
public record DeviceStagedCheckpoint(TestStagedCheckpoint host, DeviceBuffer deviceCopy)
        implements StagedCheckpoint, AutoCloseable {
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
        return Optional.of(deviceCopy);
    }

    @Override
    public ReadLease tryLease() {
        return host.tryLease();
    }

    @Override
    public void close() {
        deviceCopy.close();
        host.close();
    }
}
