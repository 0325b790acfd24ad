package io.viper.transfer.pfs;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.RepositoryProvider;
import io.viper.transfer.pfs.internal.PfsRepository;
import java.io.IOException;
import java.net.URI;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemNotFoundException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;

/**
 * Opens the PFS checkpoint repository for {@code file:///absolute/root} URIs (scheme {@code file}):
 * {@code <root>/<model>/<version>/model.safetensors} plus {@code manifest.json}, and
 * {@code <root>/<model>/LATEST}, written atomically (DESIGN.md section 5). Found with
 * {@link java.util.ServiceLoader}.
 *
 * <p>Configuration: {@value #RETENTION_KEY} (default {@value #DEFAULT_RETENTION}) is how many
 * versions of each model are kept; the version {@code LATEST} names is never deleted.
 */
public final class PfsRepositoryProvider implements RepositoryProvider {
    /** Configuration key: how many versions of each model the repository keeps. */
    public static final String RETENTION_KEY = "viper.pfs.retention";
    /** Versions kept when {@value #RETENTION_KEY} is not set. */
    public static final int DEFAULT_RETENTION = 3;

    /** The provider; cheap, as ServiceLoader requires. */
    public PfsRepositoryProvider() {
    }

    @Override
    public String scheme() {
        return "file";
    }

    /**
     * Opens the repository rooted at {@code root}, creating the directory if needed. Throws
     * {@link ViperConfigException} for a URI that is not {@code file:} with an absolute local path,
     * a root that is not a directory, or a bad {@value #RETENTION_KEY}; {@link ViperException}
     * ({@code IO}) when the root cannot be created.
     */
    @Override
    public CheckpointRepository open(URI root, Map<String, String> config) {
        Objects.requireNonNull(root, "root");
        Objects.requireNonNull(config, "config");
        if (root.getScheme() == null || !root.getScheme().equalsIgnoreCase("file")) {
            throw new ViperConfigException("repository root '" + root + "' is not a file: URI (expected file:///absolute/path)");
        }
        Path dir;
        try {
            dir = Path.of(root);
        } catch (IllegalArgumentException | FileSystemNotFoundException e) {
            throw new ViperConfigException("repository root '" + root + "' is not a file URI of an absolute local path (expected file:///absolute/path): "
                    + e.getMessage());
        }
        int retention = retention(config);
        try {
            Files.createDirectories(dir);
        } catch (FileAlreadyExistsException e) {
            throw new ViperConfigException("repository root '" + root + "' exists but is not a directory");
        } catch (IOException e) {
            throw new ViperException(ViperException.Reason.IO, "cannot create the repository root " + dir + ": " + e.getMessage(), e);
        }
        return new PfsRepository(dir, retention);
    }

    private static int retention(Map<String, String> config) {
        String value = config.get(RETENTION_KEY);
        if (value == null) {
            return DEFAULT_RETENTION;
        }
        int n;
        try {
            n = Integer.parseInt(value.strip());
        } catch (NumberFormatException e) {
            throw new ViperConfigException(RETENTION_KEY + "='" + value + "' is not a whole number (versions to keep per model, at least 1)");
        }
        if (n < 1) {
            throw new ViperConfigException(RETENTION_KEY + "='" + value + "' must be at least 1 (versions to keep per model)");
        }
        return n;
    }
}
