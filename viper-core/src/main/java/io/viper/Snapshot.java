package io.viper;

import io.viper.errors.ViperUnsupportedException;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Map;
import java.util.Objects;

/**
 * The tensors of a training step, described only when the producer decides to publish: the producer calls
 * {@link #describe(TensorSink)} on the training thread, then copies every tensor into its staging buffer before
 * {@code step} returns. The sources are read only during that call; the training loop may change them right after
 * {@code step} returns.
 */
@FunctionalInterface
public interface Snapshot {

    /** Adds every tensor to {@code sink}, in the order they should be laid out. */
    void describe(TensorSink sink);

    /**
     * Receives tensor sources; they are copied, not retained. A tensor added with the same memory, dtype and shape as
     * one added before it (tied weights: the same array or segment under a second name) is stored once, its second name
     * an alias ({@link #alias}).
     */
    interface TensorSink {
        /** A tensor whose little-endian bytes are in {@code data} (off-heap or heap segment). */
        void add(String name, DType dtype, long[] shape, MemorySegment data);

        /**
         * As {@link #add(String, DType, long[], MemorySegment)}, with the training code's word on what changed: only
         * the bytes in {@code changed} may differ from this tensor's bytes in the snapshot this producer described
         * before (its last publish); every other byte equals them. Where every tensor of a snapshot comes with its
         * changes, the producer copies and hashes only those ranges into a staging buffer that holds an earlier
         * version, without reading the rest (it would otherwise compare every byte with that version, which costs about
         * a copy). For training that knows what it wrote: rows of an embedding table that a batch touched, layers that
         * are not frozen. A byte that changed outside {@code changed} is not looked for: the version carries its old
         * value (consistently hashed, so consumers cannot tell), or, where its unit was copied for an earlier version's
         * change, the new value under the old hash, and then consumers, which check every tensor before a swap, refuse
         * the version. The default ignores {@code changed}.
         *
         * @throws io.viper.errors.ViperConfigException when a range lies outside the tensor's bytes
         */
        default void add(String name, DType dtype, long[] shape, MemorySegment data, Changes changed) {
            add(name, dtype, shape, data);
        }

        /** An F32 tensor from a float array (row-major). */
        void addFloats(String name, long[] shape, float[] values);

        /**
         * A tensor in GPU memory: {@code byteSize(dtype, shape)} little-endian bytes at the CUDA device address
         * {@code devicePointer} on device {@code device} (for example a framework tensor's data pointer). The producer
         * copies it device to device into a GPU staging buffer when the GPU has room, else device to host. The default
         * throws {@link ViperUnsupportedException}: sinks without GPU support cannot read device memory.
         */
        default void addDevice(String name, DType dtype, long[] shape, long devicePointer, int device) {
            throw new ViperUnsupportedException(
                    "no CUDA driver/device: this snapshot sink cannot read GPU tensor '" + name + "'");
        }

        /**
         * Declares {@code name} a second name of the tensor {@code target} added before it (tied weights, stored once):
         * the version's metadata maps {@code name} to {@code target}, as safetensors' {@code save_model} writes shared
         * tensors, and a consumer's {@code tensor(name)} gives the target's memory. The default throws
         * {@link ViperUnsupportedException}.
         *
         * @throws io.viper.errors.ViperConfigException when {@code target} is not a tensor added before (an alias of an
         *     alias included: no chains), {@code name} is taken by a tensor, an alias or a metadata entry
         */
        default void alias(String name, String target) {
            throw new ViperUnsupportedException("this snapshot sink takes no aliases ('" + name + "')");
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

    /**
     * The byte ranges of one tensor that may have changed since the producer's previous snapshot
     * ({@link TensorSink#add(String, DType, long[], MemorySegment, Changes)}). Immutable; ranges may overlap and come
     * in any order.
     */
    final class Changes {
        private static final Changes NONE = new Changes(new long[0]);

        /** Per range its start and end (exclusive), two longs each. */
        private final long[] bounds;

        private Changes(long[] bounds) {
            this.bounds = bounds;
        }

        /** Nothing changed. */
        public static Changes none() {
            return NONE;
        }

        /** Bytes {@code [offset, offset + length)} may have changed. */
        public static Changes range(long offset, long length) {
            return NONE.and(offset, length);
        }

        /**
         * Ranges given as start and end (exclusive) pairs, {@code [start0, end0, start1, end1, ...]} (a copy is kept):
         * for many ranges at once, such as the rows a batch touched.
         *
         * @throws IllegalArgumentException when the count is odd, a start is negative or an end precedes its start
         */
        public static Changes ofBounds(long... bounds) {
            if (bounds.length % 2 != 0) {
                throw new IllegalArgumentException(
                        "changed ranges need start, end pairs; got " + bounds.length + " numbers");
            }
            for (int i = 0; i < bounds.length; i += 2) {
                if (bounds[i] < 0 || bounds[i + 1] < bounds[i]) {
                    throw new IllegalArgumentException("changed range [" + bounds[i] + ", " + bounds[i + 1] + ")");
                }
            }
            return new Changes(bounds.clone());
        }

        /**
         * These changes and bytes {@code [offset, offset + length)}.
         *
         * @throws IllegalArgumentException when {@code offset} or {@code length} is negative
         */
        public Changes and(long offset, long length) {
            if (offset < 0 || length < 0 || offset + length < 0) {
                throw new IllegalArgumentException("changed range at " + offset + " of " + length + " bytes");
            }
            long[] b = Arrays.copyOf(bounds, bounds.length + 2);
            b[bounds.length] = offset;
            b[bounds.length + 1] = offset + length;
            return new Changes(b);
        }

        /** Each range's start and end (exclusive), two longs per range, in the order given: a copy. */
        public long[] bounds() {
            return bounds.clone();
        }

        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder("Changes[");
            for (int i = 0; i < bounds.length; i += 2) {
                sb.append(i == 0 ? "" : ", ")
                        .append('[')
                        .append(bounds[i])
                        .append(", ")
                        .append(bounds[i + 1])
                        .append(')');
            }
            return sb.append(']').toString();
        }
    }
}
