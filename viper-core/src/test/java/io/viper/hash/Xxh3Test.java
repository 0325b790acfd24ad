package io.viper.hash;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checks {@link Xxh3} against hashes computed by xxHash's own {@code xxhsum -H2} (see {@code gen-xxh128-vectors.sh}
 * next to {@code xxh128-vectors.txt}), for every length class.
 */
class Xxh3Test {
    /** length -> expected hash, in file order. */
    private static final Map<Integer, ContentHash> VECTORS = new LinkedHashMap<>();

    private static int maxLength;
    private static Arena arena;
    /** The test pattern at offset 0 (aligned) and at offset 3 (unaligned). */
    private static MemorySegment aligned;

    private static MemorySegment unaligned;

    @BeforeAll
    static void load() throws IOException {
        try (InputStream in = Xxh3Test.class.getResourceAsStream("xxh128-vectors.txt");
                BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.US_ASCII))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.isBlank() || line.startsWith("#")) {
                    continue;
                }
                String[] f = line.split(" ");
                int n = Integer.parseInt(f[0]);
                VECTORS.put(n, ContentHash.parseHex(f[1]));
                maxLength = Math.max(maxLength, n);
            }
        }
        assertTrue(VECTORS.size() > 330, "vectors: " + VECTORS.size());
        arena = Arena.ofShared();
        aligned = pattern(arena.allocate(maxLength, 64), maxLength);
        unaligned = pattern(arena.allocate(maxLength + 3, 64).asSlice(3), maxLength);
    }

    @AfterAll
    static void free() {
        arena.close();
    }

    /** b[i] = (i * 31 + 7) mod 256, as in gen-xxh128-vectors.sh. */
    static MemorySegment pattern(MemorySegment seg, int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 31 + 7);
        }
        MemorySegment.copy(b, 0, seg, ValueLayout.JAVA_BYTE, 0, n);
        return seg.asSlice(0, n);
    }

    private static byte[] patternBytes(int n) {
        return aligned.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
    }

    @Test
    void emptyInputHasXxHashsKnownValue() {
        ContentHash h = Xxh3.hash128(MemorySegment.NULL);
        assertEquals(0x99aa06d3014798d8L, h.high());
        assertEquals(0x6001c324468d497fL, h.low());
        assertEquals("99aa06d3014798d86001c324468d497f", h.toHex());
    }

    @Test
    void oneShotMatchesXxhsumForEveryLength() {
        for (Map.Entry<Integer, ContentHash> v : VECTORS.entrySet()) {
            int n = v.getKey();
            assertEquals(v.getValue(), Xxh3.hash128(aligned.asSlice(0, n)), "native, length " + n);
            assertEquals(v.getValue(), Xxh3.hash128(unaligned.asSlice(0, n)), "unaligned native, length " + n);
            if (n <= 70_000) {
                assertEquals(v.getValue(), Xxh3.hash128(MemorySegment.ofArray(patternBytes(n))), "heap, length " + n);
            }
        }
    }

    @Test
    void everyLengthClassIsCovered() {
        // 0, 1-3, 4-8, 9-16, 17-128, 129-240, and > 240 with partial stripes and blocks
        for (int n : new int[] {
            0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 255, 256, 257, 1023, 1024, 1025, 1088, 1089, 4097, 65537,
            1_000_003
        }) {
            assertTrue(VECTORS.containsKey(n), "no vector for length " + n);
        }
    }

    @Test
    void aFlippedBitChangesTheHash() {
        byte[] b = patternBytes(5000);
        ContentHash before = Xxh3.hash128(MemorySegment.ofArray(b));
        for (int pos : new int[] {0, 63, 64, 1023, 1024, 4935, 4999}) {
            b[pos] ^= 1;
            assertNotEquals(before, Xxh3.hash128(MemorySegment.ofArray(b)), "bit flip at " + pos);
            b[pos] ^= 1;
        }
        assertEquals(before, Xxh3.hash128(MemorySegment.ofArray(b)));
    }

    @Test
    void streamingWholeAndByteByByteMatchesXxhsum() {
        for (Map.Entry<Integer, ContentHash> v : VECTORS.entrySet()) {
            int n = v.getKey();
            if (n > 300 && n != 1025 && n != 4097) {
                continue;
            }
            MemorySegment data = aligned.asSlice(0, n);
            assertEquals(v.getValue(), new Xxh3.Hasher().update(data).digest(), "one update, length " + n);
            Xxh3.Hasher h = new Xxh3.Hasher();
            for (long i = 0; i < n; i++) {
                h.update(data.asSlice(i, 1));
            }
            assertEquals(v.getValue(), h.digest(), "byte by byte, length " + n);
            assertEquals(n, h.length());
        }
    }

    @Test
    void streamingRandomChunkingsEqualOneShot() {
        Random rnd = new Random(20261122);
        int[] big = {241, 256, 257, 320, 513, 1023, 1024, 1025, 1089, 2049, 4096, 4097, 65537, 100000, 1_000_003};
        List<Integer> lengths = new ArrayList<>();
        for (int n = 0; n <= 300; n += 7) {
            lengths.add(n);
        }
        for (int n : big) {
            lengths.add(n);
        }
        for (int n : lengths) {
            ContentHash expected = VECTORS.get(n);
            MemorySegment data = unaligned.asSlice(0, n);
            int tries = n > 70_000 ? 6 : 25;
            for (int t = 0; t < tries; t++) {
                int maxChunk = switch (t % 5) {
                    case 0 -> 3;
                    case 1 -> 70;
                    case 2 -> 300;
                    case 3 -> 1200;
                    default -> Math.max(1, n);
                };
                Xxh3.Hasher h = new Xxh3.Hasher();
                List<Long> cuts = new ArrayList<>();
                long off = 0;
                int prefixChecks = 0;
                while (off < n) {
                    long c = rnd.nextInt(5) == 0 ? 64L * (1 + rnd.nextInt(20)) : 1 + rnd.nextInt(maxChunk);
                    c = Math.min(c, n - off);
                    if (rnd.nextInt(8) == 0) {
                        h.update(data.asSlice(off, 0)); // empty updates change nothing
                    }
                    h.update(data.asSlice(off, c));
                    off += c;
                    cuts.add(c);
                    // digest does not disturb the state; it equals the hash of the prefix
                    if (prefixChecks < 4 && rnd.nextInt(16) == 0) {
                        prefixChecks++;
                        assertEquals(Xxh3.hash128(data.asSlice(0, off)), h.digest(), "prefix " + off + " of " + n);
                    }
                }
                assertEquals(expected, h.digest(), "length " + n + ", chunks " + cuts);
            }
        }
    }

    @Test
    void hasherResetStartsOver() {
        Xxh3.Hasher h = new Xxh3.Hasher().update(aligned.asSlice(0, 5000));
        h.reset().update(aligned.asSlice(0, 1025));
        assertEquals(VECTORS.get(1025), h.digest());
        assertEquals(1025, h.length());
    }

    @Test
    void memoryMappedFileRegion(@TempDir Path dir) throws IOException {
        int n = 1_000_003;
        int prefix = 4099; // region starts at an odd, unaligned file offset
        Path file = dir.resolve("tensor.bin");
        byte[] contents = new byte[prefix + n + 17];
        new Random(7).nextBytes(contents);
        System.arraycopy(patternBytes(n), 0, contents, prefix, n);
        Files.write(file, contents);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
                Arena a = Arena.ofConfined()) {
            MemorySegment region = ch.map(FileChannel.MapMode.READ_ONLY, prefix, n, a);
            assertEquals(VECTORS.get(n), Xxh3.hash128(region));
            Xxh3.Hasher h = new Xxh3.Hasher();
            for (long off = 0; off < n; off += 65536) {
                h.update(region.asSlice(off, Math.min(65536, n - off)));
            }
            assertEquals(VECTORS.get(n), h.digest());
            MemorySegment whole = ch.map(FileChannel.MapMode.READ_ONLY, 0, contents.length, a);
            assertEquals(VECTORS.get(n), Xxh3.hash128(whole.asSlice(prefix, n)));
        }
    }

    @Test
    void hashAllMatchesOneByOne() throws Exception {
        int[] lengths = {0, 5, 200, 1025, 100000, 4194305, 65537, 3, 1_000_003};
        List<MemorySegment> segs = new ArrayList<>();
        for (int n : lengths) {
            segs.add(unaligned.asSlice(0, n));
        }
        try (Arena confined = Arena.ofConfined()) {
            // confined to this thread: hashAll must hash it here rather than fail in a worker
            segs.add(pattern(confined.allocate(4097), 4097));
            ContentHash[] viaThreads = Xxh3.hashAll(segs, 3);
            ContentHash[] sequential = Xxh3.hashAll(segs, 1);
            ContentHash[] viaExecutor;
            try (ExecutorService ex = Executors.newFixedThreadPool(2)) {
                viaExecutor = Xxh3.hashAll(segs, ex);
            }
            for (int i = 0; i < segs.size(); i++) {
                int n = (int) segs.get(i).byteSize();
                assertEquals(VECTORS.get(n), viaThreads[i], "threads, length " + n);
                assertEquals(VECTORS.get(n), sequential[i], "sequential, length " + n);
                assertEquals(VECTORS.get(n), viaExecutor[i], "executor, length " + n);
            }
        }
        assertEquals(0, Xxh3.hashAll(List.of(), 4).length);
    }

    @Test
    void hashAllRejectsBadParallelismAndReportsClosedSegments() {
        var e = assertThrows(ViperConfigException.class, () -> Xxh3.hashAll(List.of(), 0));
        assertTrue(e.getMessage().contains("parallelism"), e.getMessage());
        MemorySegment closed;
        try (Arena a = Arena.ofShared()) {
            closed = a.allocate(1000);
        }
        List<MemorySegment> segs = List.of(aligned.asSlice(0, 10), closed, aligned.asSlice(0, 3000));
        assertThrows(IllegalStateException.class, () -> Xxh3.hashAll(segs, 2));
    }
}
