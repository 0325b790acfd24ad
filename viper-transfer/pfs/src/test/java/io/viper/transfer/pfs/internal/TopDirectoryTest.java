package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.hash.ContentHash;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A new block store marks its directory so that ext2/3/4 spread its prefixes over the block groups
 * ({@link TopDirectory}); a file system that refuses the flag stores blocks the same.
 */
class TopDirectoryTest {
    /** The file systems that know {@code FS_TOPDIR_FL}. */
    private static final Set<String> EXT = Set.of("ext2", "ext3", "ext4");

    @TempDir
    Path root;

    @Test
    void aNewBlockStoreIsMarkedWhereTheFileSystemKnowsTheFlag() throws IOException {
        Path store = root.resolve(BlockStore.DIR);
        byte[] bytes = writeOneBlock(store);
        Path block = BlockStore.pathOf(root, id());
        assertArrayEquals(bytes, Files.readAllBytes(block));
        boolean ext = EXT.contains(Files.getFileStore(root).type());
        // the CI's and this project's machines keep their temporary directories on ext4
        assertEquals(ext, TopDirectory.marked(store), Files.getFileStore(root).type() + ": marked as a top directory");
        assertFalse(
                TopDirectory.marked(block.getParent()), "a prefix is not a top directory (the flag is not inherited)");
    }

    @Test
    void aFileSystemThatRefusesTheFlagStoresBlocksTheSame() throws IOException {
        Path shm = Path.of("/dev/shm");
        Path base =
                Files.isDirectory(shm) && Files.isWritable(shm) ? Files.createTempDirectory(shm, "viper-topdir") : root;
        try {
            Path store = base.resolve(BlockStore.DIR);
            byte[] bytes = writeOneBlock(store);
            assertArrayEquals(bytes, Files.readAllBytes(BlockStore.pathOf(base, id())));
            if (!EXT.contains(Files.getFileStore(base).type())) {
                assertFalse(TopDirectory.mark(store), "tmpfs and the like refuse FS_TOPDIR_FL");
                assertFalse(TopDirectory.marked(store));
            }
        } finally {
            DurableFiles.deleteTreeQuietly(base);
        }
    }

    @Test
    void aDirectoryThatIsNotThereIsNotMarked() {
        assertFalse(TopDirectory.mark(root.resolve("missing")));
    }

    @Test
    void markingTwiceKeepsTheFlag() throws IOException {
        Path dir = Files.createDirectory(root.resolve("d"));
        boolean first = TopDirectory.mark(dir);
        assertEquals(first, TopDirectory.mark(dir), "a marked directory stays marked");
        assertEquals(first, TopDirectory.marked(dir));
        if (EXT.contains(Files.getFileStore(root).type())) {
            assertTrue(first);
        }
    }

    private static ContentHash id() {
        return ContentHash.crc32c(0x1234abcd);
    }

    /** One block of 8 KiB written through a {@link BlockBatch} into the store {@code store}; its bytes. */
    private static byte[] writeOneBlock(Path store) throws IOException {
        byte[] bytes = new byte[8192];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) (i * 31);
        }
        Map<ContentHash, FileTime> fresh = new HashMap<>();
        try (Arena arena = Arena.ofConfined();
                BlockBatch batch = new BlockBatch(store, false)) {
            MemorySegment data = arena.allocate(bytes.length, 4096);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, data, 0, bytes.length);
            batch.add(id(), BlockStore.pathOf(store.getParent(), id()), data);
            batch.commit(fresh);
        }
        assertEquals(Set.of(id()), fresh.keySet());
        return bytes;
    }
}
