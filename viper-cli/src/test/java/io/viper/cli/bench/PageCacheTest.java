package io.viper.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bench's page-cache bounds: which machines return free memory to their host (a virtio balloon with free page
 * reporting, read from sysfs), and the kernel's fill of its page cache reading every byte of a file once, whatever its
 * size.
 */
class PageCacheTest {
    @TempDir
    Path dir;

    private Path device(String name, String id, String features) throws IOException {
        Path d = Files.createDirectories(dir.resolve("devices").resolve(name));
        Files.writeString(d.resolve("device"), id + "\n");
        Files.writeString(d.resolve("features"), features + "\n");
        return d;
    }

    private static String features(int... bits) {
        char[] f = new char[64];
        Arrays.fill(f, '0');
        for (int b : bits) {
            f[b] = '1';
        }
        return new String(f);
    }

    @Test
    void aBalloonThatTakesFreePageReportsReturnsFreeMemory() throws IOException {
        device("virtio0", "0x0002", features(5, 32)); // a block device: its bit 5 means something else
        device("virtio1", "0x0005", features(1, 2, 5, 32));
        assertTrue(PageCache.returnsFreeMemory(dir.resolve("devices")));
    }

    @Test
    void noBalloonOrOneWithoutReportingDoesNot() throws IOException {
        assertFalse(PageCache.returnsFreeMemory(dir.resolve("devices")), "no virtio bus: bare metal");
        device("virtio0", "0x0002", features(5, 32));
        Path balloon = device("virtio1", "0x0005", features(1, 2, 32));
        assertFalse(PageCache.returnsFreeMemory(dir.resolve("devices")));
        Files.writeString(balloon.resolve("features"), "0110");
        assertFalse(PageCache.returnsFreeMemory(dir.resolve("devices")), "features too short to have the bit");
        Files.delete(balloon.resolve("features"));
        assertFalse(PageCache.returnsFreeMemory(dir.resolve("devices")), "unreadable features");
    }

    @Test
    void theFillReadsEveryByteOnceInStreamsOfItsOwn() throws IOException {
        byte[] bytes = new byte[(int) (3.5 * (4 << 20)) + 4097];
        new SplittableRandom(7).nextBytes(bytes);
        Path file = Files.write(dir.resolve("model.bin"), bytes);
        assertEquals(bytes.length, PageCacheFill.fill(file));
        Path small = Files.write(dir.resolve("small.bin"), new byte[4096]);
        assertEquals(4096, PageCacheFill.fill(small));
        assertEquals(0, PageCacheFill.fill(Files.write(dir.resolve("empty.bin"), new byte[0])));
    }
}
