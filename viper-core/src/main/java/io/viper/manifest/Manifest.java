package io.viper.manifest;

import io.viper.errors.ViperConfigException;
import io.viper.tensor.TensorInfo;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SequencedMap;

/**
 * A checkpoint without its bytes: what a notifier carries. Per tensor: name, dtype, shape, byte offset and length in
 * the data section, content hash, and the ids of its blocks (one block size for all tensors, or none); the total size;
 * string metadata; and the locations where the bytes can be read, in the producer's order of preference.
 *
 * <p>Immutable and thread-safe. Tensors are in data order and contiguous (validated).
 *
 * @param model the model name
 * @param version the version (1 to {@link #MAX_VERSION}), only growing per model
 * @param producerId who published it (host:pid or a configured id)
 * @param publishedAtMicros producer wall clock (epoch microseconds, {@link #nowMicros()}) when {@code publish} was
 *     called: an update's latency is measured against it
 * @param metadata string metadata (iteration, loss, ...)
 * @param tensors tensors in data order
 * @param locations where the bytes can be read, most preferred first
 */
public record Manifest(
        String model,
        long version,
        String producerId,
        long publishedAtMicros,
        SequencedMap<String, String> metadata,
        List<TensorEntry> tensors,
        List<Location> locations) {
    /**
     * The largest version, 2^53 - 1: every JSON reader reads it exactly, and a producer can always count on from it. A
     * manifest announcing more (a poisoned 2^63 - 1) is refused wherever it is read.
     */
    public static final long MAX_VERSION = (1L << 53) - 1;

    public Manifest {
        validateModelName(model);
        if (version <= 0 || version > MAX_VERSION) {
            throw new ViperConfigException(
                    "manifest " + model + ": version must be between 1 and " + MAX_VERSION + ", got " + version);
        }
        Objects.requireNonNull(producerId, "producerId");
        metadata =
                Collections.unmodifiableSequencedMap(new LinkedHashMap<>(Objects.requireNonNull(metadata, "metadata")));
        tensors = List.copyOf(tensors);
        locations = List.copyOf(locations);
        long expected = 0;
        Map<String, Boolean> seen = new HashMap<>();
        long blockBytes = tensors.isEmpty() ? 0 : tensors.getFirst().blocks().blockBytes();
        for (TensorEntry t : tensors) {
            TensorInfo i = t.info();
            if (t.blocks().blockBytes() != blockBytes) {
                throw new ViperConfigException("manifest " + model + " v" + version + ": tensor '" + i.name()
                        + "' has blocks of " + t.blocks().blockBytes() + " bytes, the first tensor of " + blockBytes
                        + " (one block size per manifest, 0 for none)");
            }
            if (seen.put(i.name(), Boolean.TRUE) != null) {
                throw new ViperConfigException(
                        "manifest " + model + " v" + version + ": duplicate tensor '" + i.name() + "'");
            }
            if (i.offset() != expected) {
                throw new ViperConfigException(
                        "manifest " + model + " v" + version + ": tensor '" + i.name() + "' starts at " + i.offset()
                                + ", expected " + expected + " (tensors must be contiguous in data order)");
            }
            expected = Math.addExact(expected, i.length());
        }
    }

    /**
     * Checks a model name: 1 to 200 characters from letters, digits, '.', '_' and '-', not starting with '.', so that
     * it is safe as a directory name, a Kafka key and a URI part.
     */
    public static String validateModelName(String model) {
        if (model == null
                || model.isEmpty()
                || model.length() > 200
                || model.startsWith(".")
                || !model.chars()
                        .allMatch(c -> c < 128 && (Character.isLetterOrDigit(c) || c == '.' || c == '_' || c == '-'))) {
            throw new ViperConfigException("invalid model name '" + model
                    + "': use 1-200 characters from letters, digits, '.', '_' and '-', not starting with '.'");
        }
        return model;
    }

    /** Sum of all tensor lengths. */
    public long totalBytes() {
        long n = 0;
        for (TensorEntry t : tensors) {
            n += t.info().length();
        }
        return n;
    }

    /** The size of the tensors' content-addressed {@link BlockList blocks}; 0 when the producer did not cut them. */
    public long blockBytes() {
        return tensors.isEmpty() ? 0 : tensors.getFirst().blocks().blockBytes();
    }

    /** The entry for {@code name}, or null. */
    public TensorEntry tensor(String name) {
        for (TensorEntry t : tensors) {
            if (t.name().equals(name)) {
                return t;
            }
        }
        return null;
    }

    /**
     * The wall clock in epoch microseconds, as {@link #publishedAtMicros()} holds it. Whole milliseconds would not do:
     * an update takes well under one, and a publish called at a fixed point in each millisecond (a paced training loop)
     * would read as 0 or 1 ms every time.
     */
    public static long nowMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    /** {@link #publishedAtMicros()} in whole milliseconds (the manifest's {@code published_at_ms}). */
    public long publishedAtMs() {
        return Math.floorDiv(publishedAtMicros, 1_000L);
    }

    /**
     * Milliseconds from the producer's {@code publish} call to now, by the wall clocks of both sides (exact on one
     * host; between hosts, off by their clocks' difference); never negative.
     */
    public double millisSincePublished() {
        return Math.max(0, nowMicros() - publishedAtMicros) / 1_000.0;
    }

    /** Whether {@code other} describes the same bytes: the same tensors (names, layout, hashes) and metadata. */
    public boolean sameContent(Manifest other) {
        return tensors.equals(other.tensors) && metadata.equals(other.metadata);
    }

    /** This manifest with {@code extra} locations appended (duplicates dropped). */
    public Manifest withLocations(List<Location> extra) {
        List<Location> all = new ArrayList<>(locations);
        for (Location l : extra) {
            if (!all.contains(l)) {
                all.add(l);
            }
        }
        return new Manifest(model, version, producerId, publishedAtMicros, metadata, tensors, all);
    }

    /** This manifest with exactly {@code newLocations}. */
    public Manifest replaceLocations(List<Location> newLocations) {
        return new Manifest(model, version, producerId, publishedAtMicros, metadata, tensors, newLocations);
    }

    @Override
    public String toString() {
        return "Manifest[" + model + " v" + version + ", " + tensors.size() + " tensors, " + totalBytes() + " bytes, "
                + locations + "]";
    }
}
