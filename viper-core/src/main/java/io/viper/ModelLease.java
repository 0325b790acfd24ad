package io.viper;

import io.viper.manifest.Manifest;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.Tensor;
import java.util.List;

/**
 * A reader's hold on one model version in a consumer. While the lease is open, its tensors stay
 * valid and unchanged: the consumer never reuses the buffer behind it. Close it when the request
 * is answered (try-with-resources). Any thread may read the tensors; {@link #close()} is idempotent.
 * Using a tensor after close throws {@link IllegalStateException}.
 */
public interface ModelLease extends AutoCloseable {
    long version();

    Manifest manifest();

    /** The tensor called {@code name}; throws {@link io.viper.errors.ViperException} (NOT_FOUND) when absent. */
    Tensor tensor(String name);

    /** All tensors, in data order. */
    List<Tensor> tensors();

    /** The model as a checkpoint view (valid while the lease is open). */
    Checkpoint checkpoint();

    @Override
    void close();
}
