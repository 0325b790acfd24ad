package io.viper.errors;

import java.io.IOException;
import java.net.BindException;
import java.nio.charset.CharacterCodingException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * One line saying what went wrong with a file or a socket. The JDK's {@link FileSystemException}s often carry only the
 * path as their message ({@code /tmp/x} for a missing directory, a file one may not read), which reads as no reason at
 * all after "cannot read". Stateless; any thread.
 */
public final class IoProblems {
    /**
     * The reason of a plain {@link FileSystemException} for ENOTDIR (strerror's words), which the JDK throws when a
     * parent of the path is a file: it has an exception of its own only for a directory listing
     * ({@link NotDirectoryException}).
     */
    private static final String ENOTDIR = "Not a directory";

    private IoProblems() {}

    /**
     * What {@code e} says went wrong, without the path when the exception names one: "no such file or directory",
     * "permission denied", "not a directory", "a parent is not a directory" (a path below a file), "already exists",
     * "directory not empty", "not text in the expected encoding", the file system's own reason, else the first line of
     * the message (the type's name when there is none).
     */
    public static String reason(IOException e) {
        return switch (e) {
            case NoSuchFileException x -> "no such file or directory";
            case AccessDeniedException x -> "permission denied";
            case NotDirectoryException x -> "not a directory";
            case FileAlreadyExistsException x -> "already exists";
            case DirectoryNotEmptyException x -> "directory not empty";
            case CharacterCodingException x ->
                "not text in the expected encoding (" + x.getClass().getSimpleName() + ")";
            case FileSystemException f when belowAFile(f) -> "a parent is not a directory";
            case FileSystemException f when f.getReason() != null -> f.getReason();
            default -> firstLine(e);
        };
    }

    /** {@link #reason} followed by the file it concerns, where the exception names one: "permission denied: /etc/x". */
    public static String describe(IOException e) {
        String reason = reason(e);
        if (e instanceof FileSystemException f && f.getFile() != null && !reason.contains(f.getFile())) {
            String other = f.getOtherFile() == null ? "" : " -> " + f.getOtherFile();
            return reason + ": " + f.getFile() + other;
        }
        return reason;
    }

    /**
     * One line for a user about any failure: {@link #describe} for an {@link IOException}, else the first line of the
     * message, the type's simple name when there is none.
     */
    public static String oneLine(Throwable e) {
        return e instanceof IOException io ? describe(io) : firstLine(e);
    }

    /**
     * Whether {@code e}, or one of its causes, is a problem the caller fixes by changing a path or a port it gave (a
     * missing file or directory, a permission, a path that is not a directory or lies below a file, a port in use)
     * rather than one that may pass by itself.
     */
    public static boolean isCallersToFix(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof NoSuchFileException
                    || t instanceof AccessDeniedException
                    || t instanceof NotDirectoryException
                    || t instanceof FileAlreadyExistsException
                    || t instanceof BindException
                    || (t instanceof FileSystemException f && belowAFile(f))) {
                return true;
            }
        }
        return false;
    }

    /**
     * Why {@code path} is no file to read or overwrite, looked at without opening it: "is a directory", or "is not a
     * regular file (a pipe, socket or device)" (opening a FIFO or a device would block, or the read never end); empty
     * for a regular file or a path that does not exist.
     */
    public static Optional<String> notARegularFile(Path path) {
        if (Files.isDirectory(path)) {
            return Optional.of("is a directory");
        }
        if (Files.exists(path) && !Files.isRegularFile(path)) {
            return Optional.of("is not a regular file (a pipe, socket or device)");
        }
        return Optional.empty();
    }

    /** Whether {@code f} is the JDK's ENOTDIR: a parent of its path is a file (by its reason; its message varies). */
    private static boolean belowAFile(FileSystemException f) {
        return ENOTDIR.equals(f.getReason());
    }

    private static String firstLine(Throwable e) {
        String m = e.getMessage();
        if (m == null || m.isBlank()) {
            return e.getClass().getSimpleName();
        }
        int nl = m.indexOf('\n');
        return nl < 0 ? m : m.substring(0, nl);
    }
}
