package io.viper;

import io.viper.manifest.Manifest;
import io.viper.spi.DeviceBuffer;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.Tensor;
import java.util.List;
import java.util.Optional;

/**
 * A reader's hold on one model version in a consumer. While the lease is open, its tensors stay valid and unchanged:
 * the consumer never reuses the buffer behind it. Close it when the request is answered (try-with-resources). Any
 * thread may read the tensors; {@link #close()} is idempotent. Using a tensor after close throws
 * {@link IllegalStateException}.
 */
public interface ModelLease extends AutoCloseable {
    long version();

    Manifest manifest();

    /** The tensor called {@code name}; throws {@link io.viper.errors.ViperNotFoundException} when absent. */
    Tensor tensor(String name);

    /** All tensors, in data order. */
    List<Tensor> tensors();

    /** The model as a checkpoint view (valid while the lease is open). */
    Checkpoint checkpoint();

    /**
     * The data section in GPU memory (tensors at their manifest offsets) when the consumer serves on GPU
     * ({@code viper.consumer.device=gpu}) and this version came over a GPU path; empty when the model is in host
     * memory. Valid while the lease is open; owned by the consumer (never close it). For a model on the GPU,
     * {@link #tensor}, {@link #tensors} and {@link #checkpoint} throw a {@link io.viper.errors.ViperException} saying
     * so.
     */
    default Optional<DeviceBuffer> device() {
        return Optional.empty();
    }

    @Override
    void close();
}
