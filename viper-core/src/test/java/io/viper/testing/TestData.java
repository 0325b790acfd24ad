package io.viper.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/** Finds the project's test data ({@code testdata/} at the repository root). */
public final class TestData {
    private TestData() {}

    /**
     * The {@code testdata} folder: {@code -Dviper.testdata} (the parent pom sets it), else {@code ../testdata} from the
     * module directory (a run from an IDE).
     *
     * @throws IllegalStateException when neither is a folder: the checkout is incomplete
     */
    public static Path root() {
        Path p = Path.of(System.getProperty("viper.testdata", "../testdata"))
                .toAbsolutePath()
                .normalize();
        if (!Files.isDirectory(p)) {
            throw new IllegalStateException(
                    "test data folder " + p + " does not exist (set -Dviper.testdata to the repository's testdata/)");
        }
        return p;
    }

    /** The {@code *.safetensors} files directly in {@code dir}, sorted by name. */
    public static List<Path> safetensorsIn(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> p.getFileName().toString().endsWith(".safetensors"))
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
