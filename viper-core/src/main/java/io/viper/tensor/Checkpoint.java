package io.viper.tensor;

import io.viper.errors.ViperConfigException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SequencedMap;

/**
 * One version of a model: an ordered list of named tensors and string metadata.
 *
 * <p>Tensor order is data order: offsets are laid out contiguously in list order (each tensor's
 * {@link TensorInfo#offset()} is the sum of the lengths before it), as a safetensors file stores them. A checkpoint
 * does not own tensor memory (see {@link Tensor}); it is immutable and may be shared between threads.
 *
 * <p>Tied weights (one tensor under two names, such as an embedding shared by a language model's input and output) are
 * stored once: the second name is an <em>alias</em>, a metadata entry mapping it to the stored tensor's name, as
 * safetensors' {@code save_model} writes them. {@link #tensor(String)} finds a tensor by either name.
 */
public final class Checkpoint {
    /** Metadata key for the training iteration that produced the checkpoint. */
    public static final String META_ITERATION = "viper.iteration";
    /** Metadata key for the training loss at that iteration. */
    public static final String META_LOSS = "viper.loss";
    /** Metadata key for the producer's id. */
    public static final String META_PRODUCER = "viper.producer";
    /** Metadata key for the producer's wall time (epoch millis) when the checkpoint was taken. */
    public static final String META_WALL_TIME = "viper.wall_time_ms";

    private final String model;
    private final long version;
    private final List<Tensor> tensors;
    private final Map<String, Tensor> byName;
    private final SequencedMap<String, String> metadata;
    private final long totalBytes;

    private Checkpoint(String model, long version, List<Tensor> tensors, Map<String, String> metadata) {
        this.model = Objects.requireNonNull(model, "model");
        if (version < 0) {
            throw new ViperConfigException("checkpoint " + model + ": negative version " + version);
        }
        this.version = version;
        List<Tensor> laidOut = new ArrayList<>(tensors.size());
        Map<String, Tensor> index = new HashMap<>();
        long offset = 0;
        for (Tensor t : tensors) {
            Tensor placed =
                    t.info().offset() == offset ? t : new Tensor(t.info().withOffset(offset), t.data());
            if (index.putIfAbsent(t.name(), placed) != null) {
                throw new ViperConfigException("checkpoint " + model + ": duplicate tensor name " + t.name());
            }
            laidOut.add(placed);
            offset = Math.addExact(offset, t.byteSize());
        }
        this.tensors = Collections.unmodifiableList(laidOut);
        this.byName = Collections.unmodifiableMap(index);
        LinkedHashMap<String, String> meta = new LinkedHashMap<>();
        metadata.forEach((k, v) -> meta.put(
                Objects.requireNonNull(k, "metadata key"), Objects.requireNonNull(v, "metadata value of " + k)));
        this.metadata = Collections.unmodifiableSequencedMap(meta);
        this.totalBytes = offset;
    }

    /** A checkpoint of {@code tensors} in data order. */
    public static Checkpoint of(String model, long version, List<Tensor> tensors, Map<String, String> metadata) {
        return new Checkpoint(model, version, tensors, metadata);
    }

    public static Builder builder(String model) {
        return new Builder(model);
    }

    public String model() {
        return model;
    }

    public long version() {
        return version;
    }

    /** Tensors in data order, with offsets laid out contiguously. */
    public List<Tensor> tensors() {
        return tensors;
    }

    /**
     * The tensor called {@code name}, or null. An alias ({@link #aliases()}) gives its tensor's memory under the
     * alias's name.
     */
    public Tensor tensor(String name) {
        Tensor t = byName.get(name);
        if (t == null) {
            Tensor target = byName.get(metadata.get(name));
            if (target != null) {
                return new Tensor(
                        new TensorInfo(
                                name,
                                target.dtype(),
                                target.shape(),
                                target.info().offset(),
                                target.byteSize()),
                        target.data());
            }
        }
        return t;
    }

    /**
     * The aliases: metadata entries whose key is no tensor's name and whose value is one, each a second name of that
     * tensor (in metadata order).
     */
    public SequencedMap<String, String> aliases() {
        LinkedHashMap<String, String> out = new LinkedHashMap<>();
        metadata.forEach((k, v) -> {
            if (!byName.containsKey(k) && byName.containsKey(v)) {
                out.put(k, v);
            }
        });
        return Collections.unmodifiableSequencedMap(out);
    }

    public SequencedMap<String, String> metadata() {
        return metadata;
    }

    /** Sum of all tensor byte lengths: the size of the data section. */
    public long totalBytes() {
        return totalBytes;
    }

    /** This checkpoint with another version number (same tensors, same memory). */
    public Checkpoint withVersion(long newVersion) {
        return new Checkpoint(model, newVersion, tensors, metadata);
    }

    /** This checkpoint with extra metadata entries (overriding equal keys). */
    public Checkpoint withMetadata(Map<String, String> extra) {
        LinkedHashMap<String, String> m = new LinkedHashMap<>(metadata);
        m.putAll(extra);
        return new Checkpoint(model, version, tensors, m);
    }

    @Override
    public String toString() {
        return "Checkpoint[" + model + " v" + version + ", " + tensors.size() + " tensors, " + totalBytes + " bytes]";
    }

    /** Collects tensors and metadata; {@link #build()} lays them out in the order added. */
    public static final class Builder {
        private final String model;
        private long version;
        private final List<Tensor> tensors = new ArrayList<>();
        private final Map<String, String> metadata = new LinkedHashMap<>();

        private Builder(String model) {
            this.model = Objects.requireNonNull(model, "model");
        }

        public Builder version(long v) {
            this.version = v;
            return this;
        }

        public Builder add(Tensor t) {
            tensors.add(Objects.requireNonNull(t, "tensor"));
            return this;
        }

        public Builder add(String name, DType dtype, long[] shape, MemorySegment data) {
            return add(Tensor.of(name, dtype, shape, data));
        }

        public Builder metadata(String key, String value) {
            metadata.put(key, value);
            return this;
        }

        public Checkpoint build() {
            return new Checkpoint(model, version, tensors, metadata);
        }
    }
}
