package io.viper.transfer.pfs.internal;

import static io.viper.transfer.pfs.internal.PfsRepository.DATA_FILE;
import static io.viper.transfer.pfs.internal.PfsRepository.LATEST_FILE;
import static io.viper.transfer.pfs.internal.PfsRepository.MANIFEST_FILE;

import io.viper.errors.IoProblems;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.manifest.Tier;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * Reads what a PFS repository holds of a model: its complete, valid version directories and the version {@code LATEST}
 * names. A directory that is not a complete, valid version is skipped and logged once (WARNING, then DEBUG for the same
 * problem). Thread-safe; it takes no lock, so a reader sees each directory before or after a rename, never during one.
 */
final class VersionReader {
    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());
    /** A version directory's name: the version in decimal, without leading zeros. */
    static final Pattern VERSION_NAME = Pattern.compile("[1-9][0-9]{0,18}");

    private final Path root;
    private final Set<String> warned = ConcurrentHashMap.newKeySet();

    /** A reader of the repository at the absolute, normalised {@code root}. */
    VersionReader(Path root) {
        this.root = root;
    }

    /** The directory of {@code model}, whose name is checked. */
    Path modelDir(String model) {
        return root.resolve(Manifest.validateModelName(model));
    }

    Path versionDir(String model, long version) {
        return modelDir(model).resolve(Long.toString(version));
    }

    /** The location of the version in {@code versionDir}: its safetensors file. */
    static Location locationOf(Path versionDir) {
        return new Location(versionDir.resolve(DATA_FILE).toUri(), Tier.PFS);
    }

    /** The complete, valid versions of {@code model}, oldest first. */
    List<Long> versions(String model) {
        Path modelDir = modelDir(model);
        List<Long> out = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(modelDir)) {
            for (Path p : entries) {
                String name = p.getFileName().toString();
                if (!VERSION_NAME.matcher(name).matches()) {
                    continue;
                }
                long v;
                try {
                    v = Long.parseLong(name);
                } catch (NumberFormatException tooLarge) {
                    continue;
                }
                if (readVersion(model, v).isPresent()) {
                    out.add(v);
                }
            }
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new ViperException(
                    ViperException.Reason.IO,
                    "cannot list the versions of " + model + " in " + modelDir + ": " + IoProblems.describe(e),
                    e);
        }
        Collections.sort(out);
        return List.copyOf(out);
    }

    /** The manifest of a complete, valid version directory, with its location here; empty (logged) otherwise. */
    Optional<Manifest> readVersion(String model, long version) {
        Path dir = versionDir(model, version);
        Path manifestFile = dir.resolve(MANIFEST_FILE);
        byte[] bytes;
        try {
            if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                return Optional.empty();
            }
            long size = Files.size(manifestFile);
            if (size > ManifestCodec.MAX_ENCODED_BYTES) {
                warnOnce(manifestFile + ": manifest of " + size + " bytes exceeds the limit of "
                        + ManifestCodec.MAX_ENCODED_BYTES + "; version skipped");
                return Optional.empty();
            }
            bytes = Files.readAllBytes(manifestFile);
        } catch (NoSuchFileException e) {
            if (Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                warnOnce(dir + ": version directory without " + MANIFEST_FILE + "; skipped");
            }
            return Optional.empty();
        } catch (IOException e) {
            warnOnce(manifestFile + ": cannot read: " + IoProblems.describe(e) + "; version skipped");
            return Optional.empty();
        }
        Manifest m;
        try {
            m = ManifestCodec.decode(bytes, manifestFile.toString());
        } catch (ViperFormatException e) {
            warnOnce(e.getMessage() + "; version skipped");
            return Optional.empty();
        }
        if (!m.model().equals(model) || m.version() != version) {
            warnOnce(manifestFile + ": holds " + m.model() + " v" + m.version() + ", not " + model + " v" + version
                    + "; version skipped");
            return Optional.empty();
        }
        if (m.blockBytes() == 0 && !Files.isRegularFile(dir.resolve(DATA_FILE))) {
            if (Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                warnOnce(dir + ": version directory without " + DATA_FILE + "; skipped");
            }
            return Optional.empty();
        }
        return Optional.of(m.replaceLocations(List.of(locationOf(dir))));
    }

    /** The version {@code LATEST} names; empty when it is absent or unreadable (logged). */
    OptionalLong readLatest(Path modelDir) {
        Path file = modelDir.resolve(LATEST_FILE);
        byte[] bytes;
        try {
            if (Files.size(file) > 64) {
                warnOnce(file + ": is larger than a version number; ignored");
                return OptionalLong.empty();
            }
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            return OptionalLong.empty();
        } catch (IOException e) {
            warnOnce(file + ": cannot read: " + IoProblems.describe(e) + "; ignored");
            return OptionalLong.empty();
        }
        String text = new String(bytes, StandardCharsets.US_ASCII).strip();
        if (VERSION_NAME.matcher(text).matches()) {
            try {
                return OptionalLong.of(Long.parseLong(text));
            } catch (NumberFormatException tooLarge) {
                // falls through to the warning
            }
        }
        warnOnce(file + ": does not hold a version number; ignored");
        return OptionalLong.empty();
    }

    /** Logs {@code message} at WARNING the first time, at DEBUG after. */
    void warnOnce(String message) {
        LOG.log(warned.add(message) ? Level.WARNING : Level.DEBUG, message);
    }
}
