package io.viper;

import io.viper.errors.ViperUnsupportedException;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.Objects;

/**
 * The tensors of a training step, described only when the producer decides to publish: the
 * producer calls {@link #describe(TensorSink)} on the training thread, then copies every tensor
 * into its staging buffer before {@code step} returns. The sources are read only during that call;
 * the training loop may change them right after {@code step} returns.
 */
@FunctionalInterface
public interface Snapshot {

    /** Adds every tensor to {@code sink}, in the order they should be laid out. */
    void describe(TensorSink sink);

    /** Receives tensor sources; they are copied, not retained. */
    interface TensorSink {
        /** A tensor whose little-endian bytes are in {@code data} (off-heap or heap segment). */
        void add(String name, DType dtype, long[] shape, MemorySegment data);

        /** An F32 tensor from a float array (row-major). */
        void addFloats(String name, long[] shape, float[] values);

        /**
         * A tensor in GPU memory: {@code byteSize(dtype, shape)} little-endian bytes at the CUDA device
         * address {@code devicePointer} on device {@code device} (for example a framework tensor's data
         * pointer). The producer copies it device to device into a GPU staging buffer when the GPU has
         * room, else device to host. The default throws {@link ViperUnsupportedException}:
         * sinks without GPU support cannot read device memory.
         */
        default void addDevice(String name, DType dtype, long[] shape, long devicePointer, int device) {
            throw new ViperUnsupportedException("no CUDA driver/device: this snapshot sink cannot read GPU tensor '" + name + "'");
        }
    }

    /** The tensors and metadata of {@code checkpoint} (its memory is read during the copy). */
    static Snapshot of(Checkpoint checkpoint) {
        Objects.requireNonNull(checkpoint, "checkpoint");
        return sink -> {
            for (Tensor t : checkpoint.tensors()) {
                sink.add(t.name(), t.dtype(), t.shape(), t.data());
            }
        };
    }

    /** F32 tensors from float arrays; {@code shapes} gives each array's shape, iteration order is layout order. */
    static Snapshot ofFloats(Map<String, float[]> values, Map<String, long[]> shapes) {
        Objects.requireNonNull(values, "values");
        Objects.requireNonNull(shapes, "shapes");
        return sink -> values.forEach((name, v) -> {
            long[] shape = shapes.get(name);
            sink.addFloats(name, shape == null ? new long[] {v.length} : shape, v);
        });
    }
}
