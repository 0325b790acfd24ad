package io.viper.spi;

import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Optional;

/**
 * Durable store of checkpoint versions (the PFS repository; docs/architecture.md#pfs-repository):
 * {@code <root>/<model>/<version>/model.safetensors} plus {@code manifest.json}, written to temporary names, fsynced
 * and renamed, with {@code <root>/<model>/LATEST} replaced atomically afterwards.
 *
 * <p>Thread-safe. A failed store leaves earlier versions and {@code LATEST} untouched.
 */
public interface CheckpointRepository extends AutoCloseable {
    /**
     * Stores {@code staged} as version {@code manifest.version()} and returns its file location. The caller holds a
     * read lease on {@code staged} for the duration.
     */
    Location store(Manifest manifest, StagedCheckpoint staged);

    /**
     * Starts storing version {@code version} of {@code model}, whose bytes are in {@code data} (the staged data
     * section) and whose block ids are still being hashed: see {@link PendingStore}. Default: nothing is written early.
     */
    default PendingStore begin(String model, long version, MemorySegment data) {
        return PendingStore.nothingEarly(this);
    }

    /**
     * Called once when a producer of {@code model} starts, before its first store: removes what an interrupted writer
     * left (temporary files of a crashed store) and repairs the pointer to the newest version (a complete version that
     * a crash or a full disk kept {@code LATEST} from naming), so that readers and the producer agree on it. Returns
     * the newest complete version stored, 0 when none, which the producer numbers after. The default only reads.
     */
    default long recover(String model) {
        return versions(model).stream().mapToLong(Long::longValue).max().orElse(0L);
    }

    /** The manifest of the newest complete version of {@code model}, with its file location. */
    Optional<Manifest> latest(String model);

    /** The manifest of {@code version}, if stored. */
    Optional<Manifest> find(String model, long version);

    /**
     * The location this repository keeps {@code model} v{@code version} at, stored or not: the only {@code file://}
     * location of that version a consumer reads (a manifest naming another file, of another model or outside the
     * repository, is not followed). Default: none.
     */
    default Optional<Location> locate(String model, long version) {
        return Optional.empty();
    }

    /** Stored versions of {@code model}, oldest first. */
    List<Long> versions(String model);

    @Override
    void close();
}
