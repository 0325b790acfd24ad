package io.viper.errors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.nio.charset.MalformedInputException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IoProblemsTest {
    @Test
    void theJdksPathOnlyMessagesGetTheirReason() {
        assertEquals(
                "no such file or directory: /tmp/nodir/s",
                IoProblems.describe(new NoSuchFileException("/tmp/nodir/s")));
        assertEquals("permission denied: /etc/x", IoProblems.describe(new AccessDeniedException("/etc/x")));
        assertEquals(
                "Read-only file system: /mnt/x",
                IoProblems.describe(new FileSystemException("/mnt/x", null, "Read-only file system")));
        assertEquals(
                "not text in the expected encoding (MalformedInputException)",
                IoProblems.describe(new MalformedInputException(1)));
        assertEquals("No space left on device", IoProblems.describe(new IOException("No space left on device\nmore")));
        assertEquals("IOException", IoProblems.reason(new IOException()));
    }

    @Test
    void anyFailureIsOneLine() {
        assertEquals(
                "no such file or directory: /tmp/nodir/s", IoProblems.oneLine(new NoSuchFileException("/tmp/nodir/s")));
        assertEquals("bad value", IoProblems.oneLine(new IllegalArgumentException("bad value\n\tat somewhere")));
        assertEquals("IllegalStateException", IoProblems.oneLine(new IllegalStateException()));
        assertEquals("IllegalStateException", IoProblems.oneLine(new IllegalStateException(" ")));
        assertEquals(
                "Unable to allocate 8 bytes", IoProblems.oneLine(new OutOfMemoryError("Unable to allocate 8 bytes")));
    }

    @Test
    void aRealMissingDirectoryIsDescribed(@TempDir Path dir) {
        IOException e = org.junit.jupiter.api.Assertions.assertThrows(
                IOException.class, () -> Files.writeString(dir.resolve("no/such/f"), "x"));
        assertTrue(IoProblems.describe(e).startsWith("no such file or directory: "), IoProblems.describe(e));
    }

    @Test
    void aPathBelowAFileIsTheCallersToFix(@TempDir Path dir) throws Exception {
        // viper secret --out FILE/x exited 1: the JDK reports ENOTDIR as a plain FileSystemException, reason "Not a
        // directory"
        Path file = Files.writeString(dir.resolve("file"), "x");
        Path below = file.resolve("x");
        IOException e =
                org.junit.jupiter.api.Assertions.assertThrows(IOException.class, () -> Files.writeString(below, "x"));
        assertEquals(FileSystemException.class, e.getClass(), "what the JDK throws");
        assertTrue(IoProblems.isCallersToFix(e));
        assertTrue(IoProblems.isCallersToFix(new ViperException(ViperException.Reason.IO, "cannot write", e)));
        assertEquals("a parent is not a directory: " + below, IoProblems.describe(e));
        assertEquals(
                "a parent is not a directory",
                IoProblems.reason(new FileSystemException(below.toString(), null, "Not a directory")));
        assertFalse(IoProblems.isCallersToFix(new FileSystemException(below.toString(), null, "Input/output error")));
        assertFalse(
                IoProblems.isCallersToFix(new IOException("Not a directory")),
                "by the reason a FileSystemException carries, not by message text");
    }

    @Test
    void aPathThatIsNoRegularFileIsNamedWithoutOpeningIt(@TempDir Path dir) throws Exception {
        Path fifo = dir.resolve("pipe");
        assertEquals(
                0,
                new ProcessBuilder("mkfifo", fifo.toString())
                        .inheritIO()
                        .start()
                        .waitFor(),
                "mkfifo");
        assertEquals(Optional.of("is a directory"), IoProblems.notARegularFile(dir));
        assertEquals(Optional.of("is not a regular file (a pipe, socket or device)"), IoProblems.notARegularFile(fifo));
        assertTrue(IoProblems.notARegularFile(Files.writeString(dir.resolve("f"), "x"))
                .isEmpty());
        assertTrue(IoProblems.notARegularFile(dir.resolve("missing")).isEmpty());
    }

    @Test
    void pathsAndPortsAreTheCallersToFixAnywhereInTheChain() {
        assertTrue(IoProblems.isCallersToFix(new ViperConfigException("x", new AccessDeniedException("/x"))));
        assertTrue(IoProblems.isCallersToFix(new UncheckedIOException(new NoSuchFileException("/x"))));
        assertTrue(IoProblems.isCallersToFix(new IllegalStateException(new BindException("Address already in use"))));
        assertFalse(IoProblems.isCallersToFix(new UncheckedIOException(new IOException("No space left on device"))));
        assertFalse(IoProblems.isCallersToFix(new IllegalStateException("bug")));
    }
}
