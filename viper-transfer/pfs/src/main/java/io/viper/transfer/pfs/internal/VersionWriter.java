package io.viper.transfer.pfs.internal;

import static io.viper.transfer.pfs.internal.DurableFiles.deleteTreeQuietly;
import static io.viper.transfer.pfs.internal.DurableFiles.fsyncDirectory;
import static io.viper.transfer.pfs.internal.DurableFiles.randomSuffix;
import static io.viper.transfer.pfs.internal.DurableFiles.writeSmallFile;
import static io.viper.transfer.pfs.internal.PfsRepository.LATEST_FILE;
import static io.viper.transfer.pfs.internal.PfsRepository.LATEST_TMP_PREFIX;

import io.viper.errors.ViperConfigException;
import io.viper.format.SafetensorsHeader;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.OptionalLong;

/**
 * Writes what a PFS repository stores: a version's safetensors file, durably and in chunks (each preceded by the test
 * hooks' {@code beforeChunk}), and {@code LATEST}, replaced atomically and only forward. Thread-safe;
 * {@link #publishLatest} runs under the model's lock.
 */
final class VersionWriter {
    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());

    private final int chunkBytes;
    private final WriteHooks hooks;
    private final VersionReader reader;

    /**
     * A writer of {@code chunkBytes} per call, calling {@code hooks} on the way; {@code reader} reads {@code LATEST}.
     */
    VersionWriter(int chunkBytes, WriteHooks hooks, VersionReader reader) {
        this.chunkBytes = chunkBytes;
        this.hooks = hooks;
        this.reader = reader;
    }

    /**
     * The length prefix and JSON header of {@code manifest}'s safetensors file, from viper-core's encoder (the one
     * {@code SafetensorsWriter} uses); the staged data section follows it as is.
     */
    static byte[] safetensorsHead(Manifest manifest) {
        List<TensorInfo> layout =
                manifest.tensors().stream().map(TensorEntry::info).toList();
        try {
            return SafetensorsHeader.encode(layout, manifest.metadata());
        } catch (IllegalArgumentException e) {
            throw new ViperConfigException(
                    "cannot store " + manifest.model() + " v" + manifest.version() + " as safetensors: "
                            + e.getMessage(),
                    e);
        }
    }

    /**
     * Writes the new safetensors file {@code file}: {@code head}, then {@code data}, forced to the device, in parallel
     * and directly where the file system allows ({@link ParallelWriter}).
     */
    void writeDataFile(Path file, byte[] head, MemorySegment data) throws IOException {
        ParallelWriter.writeFile(file, head, data, chunkBytes, hooks);
    }

    /**
     * Moves {@code LATEST} to {@code version} unless it already names that or a newer version. Call under the model
     * lock.
     */
    void publishLatest(Path modelDir, long version) throws IOException {
        OptionalLong current = reader.readLatest(modelDir);
        if (current.isPresent() && current.getAsLong() >= version) {
            return;
        }
        hooks.beforeLatest(modelDir);
        Path tmp = modelDir.resolve(LATEST_TMP_PREFIX + randomSuffix());
        try {
            writeSmallFile(tmp, (version + "\n").getBytes(StandardCharsets.US_ASCII));
            Files.move(tmp, modelDir.resolve(LATEST_FILE), StandardCopyOption.ATOMIC_MOVE);
            tmp = null;
            fsyncDirectory(modelDir);
        } finally {
            if (tmp != null) {
                deleteTreeQuietly(tmp);
            }
        }
        LOG.log(Level.DEBUG, "{0} now names version {1}", modelDir.resolve(LATEST_FILE), Long.toString(version));
    }
}
