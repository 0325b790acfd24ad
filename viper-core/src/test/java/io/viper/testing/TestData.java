package io.viper.testing;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/** Finds the shared test data ({@code shared/testdata} next to or above the checkout). */
public final class TestData {
    private TestData() {
    }

    /**
     * The {@code shared/testdata} folder found walking up from {@code user.dir} (the module
     * directory under Maven); skips the calling test when there is none.
     */
    public static Path root() {
        String override = System.getProperty("viper.testdata");
        if (override != null) {
            Path p = Path.of(override);
            assumeTrue(Files.isDirectory(p), "test data folder " + p + " (from -Dviper.testdata) does not exist");
            return p;
        }
        for (Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("shared").resolve("testdata");
            if (Files.isDirectory(candidate)) {
                return candidate;
            }
        }
        return org.junit.jupiter.api.Assumptions.abort("no shared/testdata folder above " + System.getProperty("user.dir")
                + " (expected ../shared/testdata next to the checkout); skipping the test data checks");
    }

    /** The {@code *.safetensors} files directly in {@code dir}, sorted by name. */
    public static List<Path> safetensorsIn(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> p.getFileName().toString().endsWith(".safetensors")).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
