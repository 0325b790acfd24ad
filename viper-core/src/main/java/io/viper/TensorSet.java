package io.viper;

import io.viper.tensor.Tensor;
import java.util.List;

/**
 * Tensors fetched on their own by {@link ViperConsumer#fetch} (DStore-style fine-grained access). Owns the memory they
 * live in: close it to free it; reading a tensor after that throws {@link IllegalStateException}. Any thread may read;
 * {@link #close()} is idempotent.
 */
public interface TensorSet extends AutoCloseable {
    long version();

    /** Where the tensors were read from. */
    io.viper.manifest.Location location();

    /** Bytes transferred. */
    long bytes();

    /** Bytes of unchanged blocks copied from the version the consumer serves instead of transferred. */
    default long reusedBytes() {
        return 0;
    }

    /** The fetched tensors, in the order of the model's data. */
    List<Tensor> tensors();

    /**
     * The tensor called {@code name}, or throws {@link io.viper.errors.ViperNotFoundException} if it was not fetched.
     */
    Tensor tensor(String name);

    @Override
    void close();
}
