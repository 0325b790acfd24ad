package io.viper.cli.bench;

import io.viper.CheckpointPolicy;
import io.viper.Viper;
import io.viper.ViperProducer;
import io.viper.tensor.DType;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The measurement behind {@code viper bench repository}: a producer stores {@code versions} versions of a model of
 * {@code size} bytes in a fresh PFS repository (retention keeping all of them), a share of the blocks changing between
 * versions, and the repository's size on disk is compared with one version's. One thread; not reusable.
 *
 * @param size the model's bytes
 * @param versions how many versions are stored
 * @param changed the share of blocks that changes between versions
 * @param blockBytes the producer's {@code viper.block.bytes} (0: every version a whole safetensors file)
 * @param dir an empty directory for the repository
 */
public record RepositoryBench(long size, int versions, double changed, long blockBytes, Path dir) {
    /**
     * Staging buffers of the model's size the producer's budget holds: two staged versions and the one being filled.
     */
    public static final int STAGING_BUFFERS = 3;
    /** Copies of the model the bench holds at once: the model and the producer's {@link #STAGING_BUFFERS}. */
    public static final int MODEL_COPIES = 1 + STAGING_BUFFERS;

    /**
     * What was stored.
     *
     * @param repositoryBytes the bytes of every file under the repository root
     * @param blockStoreBytes of which in the block store
     */
    public record Result(
            long size, int versions, double changed, long blockBytes, long repositoryBytes, long blockStoreBytes) {
        /** The repository's size in versions of the model. */
        public double inVersions() {
            return repositoryBytes / (double) size;
        }
    }

    public Result run() throws Exception {
        try (Arena arena = Arena.ofConfined();
                Viper viper = Viper.builder()
                        .notifier("embedded://127.0.0.1:0")
                        .pfsRoot(dir)
                        .config("viper.transports", "")
                        .config("viper.pfs.retention", Integer.toString(versions))
                        .config("viper.block.bytes", Long.toString(blockBytes))
                        .config(
                                "viper.producer.staging.budget.bytes",
                                Long.toString(STAGING_BUFFERS * size + (4 << 20)))
                        .build();
                ViperProducer producer = viper.producer("bench", CheckpointPolicy.never())) {
            MemorySegment model = arena.allocate(size, 4096);
            SplittableRandom rnd = new SplittableRandom(42);
            for (long i = 0; i + 8 <= size; i += 8) {
                model.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
            }
            ModelChanges changes = new ModelChanges(blockBytes);
            for (int v = 0; v < versions; v++) {
                if (v > 0) {
                    changes.change(model, changed);
                }
                producer.publish(sink -> sink.add("weights", DType.U8, new long[] {size}, model), Map.of())
                        .durable()
                        .get(10, TimeUnit.MINUTES);
            }
        }
        return new Result(size, versions, changed, blockBytes, bytesUnder(dir), bytesUnder(dir.resolve(".blocks")));
    }

    private static long bytesUnder(Path root) throws IOException {
        if (!Files.isDirectory(root)) {
            return 0;
        }
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(Files::isRegularFile)
                    .mapToLong(p -> {
                        try {
                            return Files.size(p);
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                    })
                    .sum();
        }
    }
}
