package io.viper.transfer.pfs;

import io.viper.ViperConfig;
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
import java.util.Objects;

/**
 * Opens the PFS checkpoint repository for {@code file:///absolute/root} URIs (scheme {@code file}):
 * {@code <root>/<model>/<version>/model.safetensors} plus {@code manifest.json}, and {@code <root>/<model>/LATEST},
 * written atomically (see docs/architecture.md#pfs-repository). Found with {@link java.util.ServiceLoader}.
 *
 * <p>Configuration: core's {@code viper.pfs.retention} ({@link ViperConfig#PFS_RETENTION}) is how many versions of each
 * model are kept; the version {@code LATEST} names is never deleted.
 */
public final class PfsRepositoryProvider implements RepositoryProvider {
    /** The provider; cheap, as ServiceLoader requires. */
    public PfsRepositoryProvider() {}

    @Override
    public String scheme() {
        return "file";
    }

    /**
     * Opens the repository rooted at {@code root}, creating the directory if needed. Throws
     * {@link ViperConfigException} for a URI that is not {@code file:} with an absolute local path, or a root that is
     * not a directory; {@link ViperException} ({@code IO}) when the root cannot be created.
     */
    @Override
    public CheckpointRepository open(URI root, ViperConfig config) {
        Objects.requireNonNull(root, "root");
        Objects.requireNonNull(config, "config");
        if (root.getScheme() == null || !root.getScheme().equalsIgnoreCase("file")) {
            throw new ViperConfigException(
                    "repository root '" + root + "' is not a file: URI (expected file:///absolute/path)");
        }
        Path dir;
        try {
            dir = Path.of(root);
        } catch (IllegalArgumentException | FileSystemNotFoundException e) {
            throw new ViperConfigException("repository root '" + root
                    + "' is not a file URI of an absolute local path (expected file:///absolute/path): "
                    + e.getMessage());
        }
        int retention = config.get(ViperConfig.PFS_RETENTION);
        try {
            Files.createDirectories(dir);
        } catch (FileAlreadyExistsException e) {
            throw new ViperConfigException("repository root '" + root + "' exists but is not a directory");
        } catch (IOException e) {
            throw new ViperException(
                    ViperException.Reason.IO, "cannot create the repository root " + dir + ": " + e.getMessage(), e);
        }
        return new PfsRepository(dir, retention);
    }
}
