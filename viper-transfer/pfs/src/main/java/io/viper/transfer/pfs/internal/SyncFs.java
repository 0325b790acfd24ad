package io.viper.transfer.pfs.internal;

import java.lang.System.Logger.Level;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * {@code syncfs(2)} through the FFM API: makes everything written to the file system holding a path durable in one
 * call, where an {@code fsync} per file would make the file system commit its journal once per file. The block store
 * syncs a version's new blocks so before it renames them into place. Where the C library lacks it (not Linux) or the
 * call fails, {@link #sync} returns false and the caller fsyncs each file. Also {@code posix_fallocate(3)} for files
 * written in parallel pieces ({@link #preallocate}). Static and thread-safe.
 */
final class SyncFs {
    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());

    private static final MethodHandle SYNCFS;
    /** {@code int posix_fallocate(int fd, off_t offset, off_t len)}; null where missing. */
    private static final MethodHandle FALLOCATE;

    static {
        MethodHandle syncfs = null;
        MethodHandle fallocate = null;
        if (FileDescriptors.available()) {
            try {
                syncfs = FileDescriptors.optional(
                        "syncfs", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
                fallocate = FileDescriptors.optional(
                        "posix_fallocate",
                        FunctionDescriptor.of(
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_LONG,
                                ValueLayout.JAVA_LONG));
            } catch (RuntimeException | LinkageError e) {
                LOG.log(Level.DEBUG, "syncfs is not available; new blocks are fsynced one by one", e);
            }
        }
        SYNCFS = syncfs;
        FALLOCATE = fallocate;
    }

    /** Tests turn it off to exercise the fsync per file that stands in where {@code syncfs} is missing. */
    static volatile boolean enabled = true;

    private SyncFs() {}

    /**
     * Reserves {@code length} bytes for the new file {@code file} before its pieces are written in parallel, so that
     * the file system lays it out in one run as a sequential write would, not in the order the pieces land (which a
     * later sequential read pays for); best effort, false where it could not.
     */
    static boolean preallocate(Path file, long length) {
        if (FALLOCATE == null || length <= 0) {
            return false;
        }
        try {
            int fd = FileDescriptors.open(file, FileDescriptors.WRITE);
            if (fd < 0) {
                return false;
            }
            try {
                return (int) FALLOCATE.invokeExact(fd, 0L, length) == 0;
            } finally {
                FileDescriptors.close(fd);
            }
        } catch (Throwable e) { // invokeExact declares Throwable; the write goes on without
            return false;
        }
    }

    /** Whether everything written to the file system of the directory {@code dir} is now durable. */
    static boolean sync(Path dir) {
        if (SYNCFS == null || !enabled) {
            return false;
        }
        try {
            int fd = FileDescriptors.open(dir, FileDescriptors.READ);
            if (fd < 0) {
                return false;
            }
            try {
                return (int) SYNCFS.invokeExact(fd) == 0;
            } finally {
                FileDescriptors.close(fd);
            }
        } catch (Throwable e) { // invokeExact declares Throwable; the caller falls back to fsyncs
            LOG.log(Level.DEBUG, "syncfs failed; new blocks are fsynced one by one", e);
            return false;
        }
    }
}
