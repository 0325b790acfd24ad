package io.viper.agent.internal;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * One shared-memory file of the agent, mapped read-write into the agent for as long as it is open. Clients map the same
 * file by its path. {@link #close()} unmaps it and unlinks the file, unless another file took its name meanwhile. The
 * mapping stays valid in the agent even when someone deletes the file: {@link #linked()} tells whether clients can
 * still open it.
 *
 * <p>Thread-safe: the segment may be read and written from any thread while the file is open; close once no thread uses
 * it.
 */
final class ShmFile implements AutoCloseable {
    private final Path path;
    private final Object inode;
    private final Arena arena;
    private final MemorySegment segment;
    private final Runnable onClose;

    ShmFile(Path path, Object inode, Arena arena, MemorySegment segment, Runnable onClose) {
        this.path = path;
        this.inode = inode;
        this.arena = arena;
        this.segment = segment;
        this.onClose = onClose;
    }

    Path path() {
        return path;
    }

    /** The whole file, mapped read-write. */
    MemorySegment segment() {
        return segment;
    }

    long byteSize() {
        return segment.byteSize();
    }

    /** Whether the file is still at its path (a client can open it), not deleted or replaced. */
    boolean linked() {
        try {
            return inode.equals(Files.getAttribute(path, "unix:ino", LinkOption.NOFOLLOW_LINKS));
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            return false;
        }
    }

    /** Unmaps the file and unlinks it if it is still this file. Idempotent. */
    @Override
    public synchronized void close() {
        if (!arena.scope().isAlive()) {
            return;
        }
        boolean ours = linked();
        arena.close();
        onClose.run();
        if (ours) {
            try {
                Files.deleteIfExists(path);
            } catch (IOException e) {
                System.getLogger(ShmFile.class.getName())
                        .log(
                                System.Logger.Level.WARNING,
                                "cannot remove shared-memory file " + path + ": " + e.getMessage());
            }
        }
    }

    @Override
    public String toString() {
        return path.toString();
    }
}
