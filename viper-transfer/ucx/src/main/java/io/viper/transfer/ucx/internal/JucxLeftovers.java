package io.viper.transfer.ucx.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Removes the directories jucx unpacked its native library into for processes that are gone. jucx (1.12) copies
 * {@code libjucx.so} into a new {@code jucx<random>} directory under {@code java.io.tmpdir} in every process that loads
 * it, and only a normal exit deletes it: each process killed with SIGKILL left one behind (532 KB).
 *
 * <p>When this process starts its first UCX context, {@link #removeOnce} deletes each such directory that is this
 * user's, not a link, older than {@link #MIN_AGE}, and whose library no running process maps that this process may read
 * the memory map of ({@code /proc/<pid>/maps}). The age is what makes it safe: jucx loads the library right after
 * unpacking it, and deleting the file of a library a process has loaded leaves its mapping intact, so even a directory
 * of a live process whose map cannot be read costs that process nothing but its own clean-up at exit. Where there is no
 * {@code /proc}, it does nothing.
 *
 * <p>Thread-safe: the first call does the work, later calls return at once.
 */
public final class JucxLeftovers {
    private static final System.Logger LOG = System.getLogger(JucxLeftovers.class.getName());
    /** How old a directory must be before it is looked at. */
    static final Duration MIN_AGE = Duration.ofMinutes(1);
    /** The names {@code Files.createTempDirectory("jucx")} gives. */
    private static final Pattern NAME = Pattern.compile("jucx-?[0-9]+");

    private static volatile boolean done;

    private JucxLeftovers() {}

    /** Removes the leftovers under {@code java.io.tmpdir}, once per process. */
    public static void removeOnce() {
        if (done) {
            return;
        }
        synchronized (JucxLeftovers.class) {
            if (!done) {
                done = true;
                try {
                    remove(Path.of(System.getProperty("java.io.tmpdir")), MIN_AGE);
                } catch (IOException | RuntimeException e) {
                    LOG.log(Level.DEBUG, "cannot look for jucx's leftover directories", e);
                }
            }
        }
    }

    /**
     * Deletes the directories of processes that are gone under {@code tmp} that are at least {@code minAge} old, and
     * returns them.
     */
    static List<Path> remove(Path tmp, Duration minAge) throws IOException {
        Path proc = Path.of("/proc");
        if (!Files.isDirectory(proc.resolve("self"))) {
            return List.of();
        }
        Object me = Files.getAttribute(proc.resolve("self"), "unix:uid");
        Instant cutoff = Instant.now().minus(minAge);
        List<Path> candidates = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(
                tmp, p -> NAME.matcher(p.getFileName().toString()).matches())) {
            for (Path d : entries) {
                try {
                    if (Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)
                            && me.equals(Files.getAttribute(d, "unix:uid", LinkOption.NOFOLLOW_LINKS))
                            && Files.getLastModifiedTime(d, LinkOption.NOFOLLOW_LINKS)
                                    .toInstant()
                                    .isBefore(cutoff)) {
                        candidates.add(d.toAbsolutePath());
                    }
                } catch (NoSuchFileException gone) {
                    // another process removed it
                }
            }
        }
        if (candidates.isEmpty()) {
            return List.of();
        }
        try (DirectoryStream<Path> pids = Files.newDirectoryStream(
                proc, p -> p.getFileName().toString().chars().allMatch(Character::isDigit))) {
            for (Path pid : pids) {
                String maps;
                try {
                    maps = Files.readString(pid.resolve("maps"), StandardCharsets.ISO_8859_1);
                } catch (NoSuchFileException gone) {
                    continue;
                } catch (IOException e) {
                    continue; // not readable (another user's, or not dumpable): see the class comment
                }
                candidates.removeIf(d -> maps.contains(d + "/"));
                if (candidates.isEmpty()) {
                    return List.of();
                }
            }
        }
        for (Path d : candidates) {
            deleteTree(d);
            LOG.log(Level.DEBUG, "removed {0}, left by a process that is gone", d);
        }
        return candidates;
    }

    /** Deletes {@code top} and what is in it, following no link. */
    private static void deleteTree(Path top) throws IOException {
        Files.walkFileTree(top, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.deleteIfExists(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                Files.deleteIfExists(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
