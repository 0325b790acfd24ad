package io.viper.auth;

import io.viper.ViperConfig;
import io.viper.errors.IoProblems;
import io.viper.errors.ViperConfigException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;
import java.util.Optional;

/**
 * This user's own secret, what every producer, consumer and broker of the user uses when no
 * {@code viper.auth.secret.file} is set, so that on one machine other users are kept out with nothing configured: a
 * file {@code secret} in {@code $XDG_CONFIG_HOME/viper} (or {@code ~/.config/viper}), made on first use with a new
 * random secret, mode 600 in a directory of mode 700. {@code viper.auth.user.secret} names another file, or {@code off}
 * for none. Stateless and thread-safe; processes that make it at once agree on one (the first one linked into place).
 */
final class UserSecret {
    /** The value of {@code viper.auth.user.secret} that means the file in this user's config directory. */
    static final String AUTO = "auto";
    /** The value of {@code viper.auth.user.secret} that means no secret unless {@code viper.auth.secret.file}. */
    static final String OFF = "off";

    private UserSecret() {}

    /** The file {@code viper.auth.user.secret} means, or empty for {@code off}. */
    static Optional<Path> file(ViperConfig config) {
        String v = config.get(ViperConfig.AUTH_USER_SECRET).strip();
        if (v.toLowerCase(Locale.ROOT).equals(OFF)) {
            return Optional.empty();
        }
        if (!v.toLowerCase(Locale.ROOT).equals(AUTO)) {
            return Optional.of(Path.of(v));
        }
        String xdg = System.getenv("XDG_CONFIG_HOME");
        Path base = xdg != null && !xdg.isBlank() && Path.of(xdg).isAbsolute()
                ? Path.of(xdg)
                : Path.of(System.getProperty("user.home"), ".config");
        return Optional.of(base.resolve("viper").resolve("secret"));
    }

    /**
     * Reads {@code file}, making it first when it does not exist: a new secret is written to a temporary file of mode
     * 600 and hard-linked into place, which fails when another process linked its own first (then that one is read).
     *
     * @throws ViperConfigException naming the key, the file and the problem
     */
    static Secret loadOrCreate(Path file) {
        String what = ViperConfig.AUTH_USER_SECRET.name() + " " + file;
        if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            create(file, what);
        }
        return Secret.load(file, what);
    }

    private static void create(Path file, String what) {
        Path dir = file.toAbsolutePath().getParent();
        Path tmp = null;
        try {
            if (!Files.isDirectory(dir)) {
                Files.createDirectories(
                        dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            }
            tmp = Files.createTempFile(
                    dir,
                    ".secret-",
                    ".tmp",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(tmp, Secret.generate() + "\n", StandardCharsets.UTF_8);
            Files.createLink(file, tmp);
        } catch (FileAlreadyExistsException e) {
            // Another process of this user made it meanwhile: use theirs.
        } catch (IOException | UnsupportedOperationException e) {
            throw new ViperConfigException(what + ": cannot make this user's secret ("
                    + (e instanceof IOException io ? IoProblems.reason(io) : e.getMessage()) + "); set "
                    + ViperConfig.AUTH_SECRET_FILE.name() + ", or " + ViperConfig.AUTH_USER_SECRET.name()
                    + " to a writable path");
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException e) {
                    // A leftover temporary of mode 600 in the user's own directory; harmless.
                }
            }
        }
    }
}
