package io.viper.transfer.pfs.internal;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * Marks the block store's directory as the top of a directory hierarchy ({@code chattr +T}: {@code FS_TOPDIR_FL}
 * through {@code ioctl(FS_IOC_SETFLAGS)}), so that ext2/3/4 spread the 256 prefix directories made under it over the
 * file system's block groups instead of packing them into the group of their parent.
 *
 * <p>Why: ext4 puts a new file's inode in its directory's group, and, without a journal, skips every inode of that
 * group freed in the last minute or more ({@code recently_deleted}) by scanning past it on each allocation. A store
 * whose retention deletes a version's blocks as the next version's are written then pays a scan of the freed inodes for
 * every new block file when all prefixes share one group: 1024 files took 123-156 ms to create there, against 11-13 ms
 * with the prefixes spread (docs/benchmarks.md). Other file systems refuse the flag, and nothing changes there. Static
 * and thread-safe.
 */
final class TopDirectory {
    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());
    /** {@code _IOR('f', 1, long)} and {@code _IOW('f', 2, long)}: the same on Linux's x86-64 and aarch64. */
    private static final long FS_IOC_GETFLAGS = 0x80086601L;

    private static final long FS_IOC_SETFLAGS = 0x40086602L;
    /** {@code FS_TOPDIR_FL}. */
    static final int FS_TOPDIR_FL = 0x00020000;

    /** {@code int ioctl(int fd, unsigned long request, int *flags)}; null where missing. */
    private static final MethodHandle IOCTL;

    static {
        MethodHandle ioctl = null;
        if (FileDescriptors.available()) {
            try {
                ioctl = FileDescriptors.optional(
                        "ioctl",
                        FunctionDescriptor.of(
                                ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS),
                        Linker.Option.firstVariadicArg(2));
            } catch (RuntimeException | LinkageError e) {
                LOG.log(Level.DEBUG, "ioctl is not available; the block store's prefixes are not spread", e);
            }
        }
        IOCTL = ioctl;
    }

    private TopDirectory() {}

    /**
     * Sets {@code FS_TOPDIR_FL} on {@code dir}, a directory this process just made; best effort: false where the file
     * system or the platform refuses it (the store works the same, its prefixes placed as the file system likes).
     */
    static boolean mark(Path dir) {
        return topDirectory(dir, true);
    }

    /** Whether {@code dir} has {@code FS_TOPDIR_FL}; false where the flags cannot be read (tests). */
    static boolean marked(Path dir) {
        return topDirectory(dir, false);
    }

    /** Reads {@code dir}'s flags and, if {@code set}, adds {@code FS_TOPDIR_FL}; whether the directory has it then. */
    private static boolean topDirectory(Path dir, boolean set) {
        int fd = IOCTL == null ? -1 : FileDescriptors.open(dir, FileDescriptors.READ);
        if (fd < 0) {
            return false;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment flags = arena.allocate(ValueLayout.JAVA_LONG); // the kernel reads an int; 8 bytes are safe
            if ((int) IOCTL.invokeExact(fd, FS_IOC_GETFLAGS, flags) != 0) {
                return false;
            }
            int now = flags.get(ValueLayout.JAVA_INT, 0);
            if ((now & FS_TOPDIR_FL) != 0 || !set) {
                return (now & FS_TOPDIR_FL) != 0;
            }
            flags.set(ValueLayout.JAVA_INT, 0, now | FS_TOPDIR_FL);
            return (int) IOCTL.invokeExact(fd, FS_IOC_SETFLAGS, flags) == 0;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) { // invokeExact declares Throwable
            throw new IllegalStateException("ioctl " + dir, e);
        } finally {
            FileDescriptors.close(fd);
        }
    }
}
