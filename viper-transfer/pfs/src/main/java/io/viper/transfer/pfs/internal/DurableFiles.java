package io.viper.transfer.pfs.internal;

import io.viper.errors.IoProblems;
import io.viper.errors.ViperFormatException;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Instant;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The file operations the PFS repository and its block store build on: writes that are durable when they return
 * (fsynced file, fsynced directory), names for temporary entries, and deletions that log instead of failing. Static and
 * thread-safe.
 */
final class DurableFiles {
    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());
    private static final boolean WINDOWS =
            System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("windows");

    private DurableFiles() {}

    /** Writes {@code bytes} to the new file {@code file} and forces them to the device. */
    static void writeSmallFile(Path file, byte[] bytes) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            writeFully(ch, ByteBuffer.wrap(bytes));
            ch.force(true);
        }
    }

    static void writeFully(FileChannel ch, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            ch.write(buffer);
        }
    }

    /**
     * Makes {@code dir}, an entry the repository owns (a model directory, the block store or one of its prefixes), a
     * directory: creates it when missing ({@code mkdir}, which follows no link) and returns true; returns false when it
     * is one already. A symbolic link there is refused, never followed: one planted by another user who may write into
     * the repository would send its writes anywhere.
     *
     * @throws ViperFormatException when {@code dir} is a symbolic link or some other file
     */
    static boolean ensureDirectory(Path dir) throws IOException {
        try {
            Files.createDirectory(dir);
            return true;
        } catch (FileAlreadyExistsException e) {
            if (Files.isSymbolicLink(dir)) {
                throw new ViperFormatException(
                        dir.toString(),
                        "is a symbolic link; a PFS repository writes through no link: remove it (or make it a"
                                + " directory)");
            }
            if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                throw new ViperFormatException(dir.toString(), "is a file, where the PFS repository keeps a directory");
            }
            return false;
        }
    }

    /** Forces {@code dir}'s entries (a rename or a new file in it) to the device. */
    static void fsyncDirectory(Path dir) throws IOException {
        if (WINDOWS) {
            return; // directories cannot be opened for fsync there; NTFS journals the rename
        }
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }

    /** A random suffix that keeps temporary names of concurrent writers apart. */
    static String randomSuffix() {
        return Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    }

    /** Deletes {@code top} and everything under it; what cannot be deleted is logged, not thrown. */
    static void deleteTreeQuietly(Path top) {
        try {
            Files.walkFileTree(top, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                    if (e instanceof NoSuchFileException) {
                        return FileVisitResult.CONTINUE;
                    }
                    throw e;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                    Files.deleteIfExists(dir);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot delete {0}: {1}", top, IoProblems.describe(e));
        }
    }

    /** The newest modification time of {@code p} and, for a directory, its direct entries. */
    static Instant newestModification(Path p) throws IOException {
        Instant newest = Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS).toInstant();
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(p)) {
                for (Path e : entries) {
                    Instant t = Files.getLastModifiedTime(e, LinkOption.NOFOLLOW_LINKS)
                            .toInstant();
                    if (t.isAfter(newest)) {
                        newest = t;
                    }
                }
            } catch (NoSuchFileException gone) {
                return newest;
            }
        }
        return newest;
    }
}
