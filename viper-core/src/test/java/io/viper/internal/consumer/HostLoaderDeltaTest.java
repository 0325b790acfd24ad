package io.viper.internal.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.hash.HashAlgorithm;
import io.viper.manifest.BlockList;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The host loader's delta: which bytes it leaves in place in its receive buffer, which it copies from its base and
 * which it reads, and when it has none of them; a bad block in place is refetched.
 */
class HostLoaderDeltaTest {
    private static final CountingPool POOL = new CountingPool(2);
    /** Blocks of 1 MiB: as large as the pieces the pool hashes, so that each block in place is one. */
    private static final long BLOCK = 1L << 20;

    private static final Location LOC = new Location(URI.create("mem://src"), Tier.HOST);

    @AfterAll
    static void stop() {
        POOL.shutdown();
    }

    /** A version of one tensor of {@code data}'s bytes, with its CRC32C and block ids. */
    private static Manifest manifest(long version, MemorySegment data) {
        TensorInfo info = new TensorInfo("w", DType.U8, new long[] {data.byteSize()}, 0, data.byteSize());
        List<io.viper.hash.ContentHash> ids = new ArrayList<>();
        for (long at = 0; at < data.byteSize(); at += BLOCK) {
            ids.add(BlockList.idOf(data.asSlice(at, Math.min(BLOCK, data.byteSize() - at))));
        }
        TensorEntry e =
                new TensorEntry(info, HashAlgorithm.CRC32C.hash(data), OptionalLong.empty(), new BlockList(BLOCK, ids));
        return new Manifest("m", version, "test", 0, new LinkedHashMap<>(), List.of(e), List.of(LOC));
    }

    /** Reads from {@code source}, counting the bytes asked for. */
    private static TransportClient client(MemorySegment source, AtomicLong bytesRead) {
        return client(source, bytesRead, new AtomicInteger());
    }

    /** As above, noting in {@code handedAtFirstRead} how many hash tasks the pool had got when the first read began. */
    private static TransportClient client(MemorySegment source, AtomicLong bytesRead, AtomicInteger handedAtFirstRead) {
        return client(read -> source, bytesRead, handedAtFirstRead);
    }

    /** Reads read {@code k} (from 0) from {@code sourceOfRead.apply(k)}, counting the bytes asked for. */
    private static TransportClient client(
            IntFunction<MemorySegment> sourceOfRead, AtomicLong bytesRead, AtomicInteger handedAtFirstRead) {
        AtomicInteger reads = new AtomicInteger();
        return new TransportClient() {
            @Override
            public void read(Manifest manifest, Location location, List<ByteRange> ranges, MemorySegment destination) {
                if (bytesRead.get() == 0) {
                    handedAtFirstRead.set(POOL.handed());
                }
                MemorySegment source = sourceOfRead.apply(reads.getAndIncrement());
                for (ByteRange r : ranges) {
                    MemorySegment.copy(source, r.sourceOffset(), destination, r.destinationOffset(), r.length());
                    bytesRead.addAndGet(r.length());
                }
            }

            @Override
            public void close() {}
        };
    }

    /** 10 blocks and 7 bytes of random bytes. */
    private static MemorySegment random(Arena arena) {
        MemorySegment v = arena.allocate(10 * BLOCK + 7);
        SplittableRandom rnd = new SplittableRandom(3);
        for (long i = 0; i < v.byteSize(); i += 8) {
            v.set(ValueLayout.JAVA_LONG_UNALIGNED, Math.min(i, v.byteSize() - 8), rnd.nextLong());
        }
        return v;
    }

    /** A copy of {@code v} with block {@code block} changed. */
    private static MemorySegment changed(Arena arena, MemorySegment v, long block) {
        MemorySegment out = arena.allocate(v.byteSize()).copyFrom(v);
        flip(out, block * BLOCK + 1);
        return out;
    }

    /** Inverts the byte at {@code at} of {@code s}, in place. */
    private static void flip(MemorySegment s, long at) {
        s.set(ValueLayout.JAVA_BYTE, at, (byte) ~s.get(ValueLayout.JAVA_BYTE, at));
    }

    @Test
    void aBaseCopiesItsBlocksAndARecycledOneMeansAFullPull() {
        try (Arena arena = Arena.ofShared();
                ReceiveSlots slots = new ReceiveSlots("m", 1 << 30, 1000)) {
            MemorySegment v1 = random(arena);
            MemorySegment v2 = arena.allocate(v1.byteSize()).copyFrom(v1);
            v2.set(ValueLayout.JAVA_BYTE, 4 * BLOCK + 1, (byte) 0x5a);
            v2.set(ValueLayout.JAVA_BYTE, 4 * BLOCK + 2, (byte) 0xa5);
            Manifest m1 = manifest(1, v1);
            Manifest m2 = manifest(2, v2);
            Verifier verifier = new Verifier("m", POOL, 2);

            LoadedModel base = new LoadedModel(m1, arena.allocate(v1.byteSize()).copyFrom(v1), () -> {});
            HostLoader withBase = new HostLoader(slots, verifier, () -> base.tryRetain() ? base : null);
            AtomicLong read = new AtomicLong();
            Loader.Loaded delta = withBase.load(m2, LOC, client(v2, read));
            assertEquals(BLOCK, delta.bytesMoved(), "only the changed block moved");
            assertEquals(v2.byteSize() - BLOCK, delta.bytesReused());
            assertEquals(BLOCK, read.get());
            assertEquals(-1, v2.mismatch(delta.model().hostData()));
            assertEquals(1, base.references(), "the loader gave its reference on the base back");

            base.releaseRef(); // recycled: its buffer went back, nothing may be copied from it
            assertFalse(base.tryRetain());
            read.set(0);
            // The delta's buffer stays held, so the load gets the other one, which holds nothing yet.
            assertLoads(withBase, 2, v2, v2.byteSize(), 0, "without a base every byte is pulled");
            delta.model().releaseRef();
        }
    }

    /**
     * Loads {@code bytes} as version {@code v}, checks the bytes read (all counted as moved) and reused, and that the
     * version loaded is {@code bytes}; then releases it.
     */
    private static void assertLoads(
            HostLoader loader, long v, MemorySegment bytes, long moved, long reused, String why) {
        AtomicLong read = new AtomicLong();
        Loader.Loaded loaded = loader.load(manifest(v, bytes), LOC, client(bytes, read));
        assertEquals(moved, loaded.bytesMoved(), why);
        assertEquals(moved, read.get());
        assertEquals(reused, loaded.bytesReused());
        assertEquals(-1, bytes.mismatch(loaded.model().hostData()), "v" + v + " is the one published");
        loaded.model().releaseRef();
    }

    @Test
    void aBufferStillHoldingAnOlderVersionLeavesItsUnchangedBlocksInPlace() {
        try (Arena arena = Arena.ofShared();
                ReceiveSlots slots = new ReceiveSlots("m", 1 << 30, 1000)) {
            MemorySegment v1 = random(arena);
            MemorySegment v2 = changed(arena, v1, 4);
            MemorySegment v3 = changed(arena, v2, 7);
            Verifier verifier = new Verifier("m", POOL, 2);
            HostLoader noBase = new HostLoader(slots, verifier, () -> null);
            // Released, v1's buffer is free again and still holds v1, verified: v3's unchanged blocks stay where v1 had
            // them.
            assertLoads(noBase, 1, v1, v1.byteSize(), 0, "a new buffer holds nothing");
            assertLoads(
                    noBase,
                    3,
                    v3,
                    2 * BLOCK,
                    v3.byteSize() - 2 * BLOCK,
                    "the two blocks v3 changed since v1 were read, nothing else");
        }
    }

    @Test
    void theBlocksInPlaceAreHandedToTheHashPoolBeforeTheChangedOnesAreRead() {
        try (Arena arena = Arena.ofShared();
                ReceiveSlots slots = new ReceiveSlots("m", 1 << 30, 1000)) {
            MemorySegment v1 = random(arena);
            MemorySegment v2 = changed(arena, v1, 4);
            HostLoader noBase = new HostLoader(slots, new Verifier("m", POOL, 2), () -> null);
            assertLoads(noBase, 1, v1, v1.byteSize(), 0, "a new buffer holds nothing");

            int before = POOL.handed();
            AtomicInteger handedAtFirstRead = new AtomicInteger();
            Loader.Loaded second = noBase.load(manifest(2, v2), LOC, client(v2, new AtomicLong(), handedAtFirstRead));
            assertEquals(BLOCK, second.bytesMoved());
            assertTrue(
                    handedAtFirstRead.get() > before,
                    "the blocks in place went to the hash pool before the changed one was read");
            second.model().releaseRef();
        }
    }

    @Test
    void aBlockScribbledInTheFreeBufferIsCaughtAndTheVersionPulledWhole() {
        try (Arena arena = Arena.ofShared();
                ReceiveSlots slots = new ReceiveSlots("m", 1 << 30, 1000)) {
            MemorySegment v1 = random(arena);
            MemorySegment v2 = changed(arena, v1, 4);
            Verifier verifier = new Verifier("m", POOL, 2);
            HostLoader noBase = new HostLoader(slots, verifier, () -> null);
            AtomicLong read = new AtomicLong();

            Loader.Loaded first = noBase.load(manifest(1, v1), LOC, client(v1, read));
            // Memory gone bad after the verification, in block 8, which v2 has at the same place.
            MemorySegment held = first.model().hostData();
            flip(held, 8 * BLOCK + 3);
            first.model().releaseRef();
            assertLoads(
                    noBase,
                    2,
                    v2,
                    BLOCK + v2.byteSize(),
                    0,
                    "the changed block, then the whole version after the check failed");
        }
    }

    /**
     * viper.consumer.verify.reuse.hashes: the blocks left in place take the hashes computed when their version was
     * verified, so a byte that changed in the idle buffer since is not read again (the price of the setting, which the
     * default does not pay: the test above); every tensor's hash is still compared with the manifest.
     */
    @Test
    void withReusedHashesTheBlocksInPlaceAreNotReadAgain() {
        try (Arena arena = Arena.ofShared();
                ReceiveSlots slots = new ReceiveSlots("m", 1 << 30, 1000)) {
            MemorySegment v1 = random(arena);
            MemorySegment v2 = changed(arena, v1, 4);
            HostLoader reusing = new HostLoader(slots, new Verifier("m", POOL, 2), () -> null, true, null);
            Loader.Loaded first = reusing.load(manifest(1, v1), LOC, client(v1, new AtomicLong()));
            MemorySegment held = first.model().hostData();
            flip(held, 8 * BLOCK + 3);
            first.model().releaseRef();
            AtomicLong read = new AtomicLong();
            Loader.Loaded second = reusing.load(manifest(2, v2), LOC, client(v2, read));
            assertEquals(
                    BLOCK,
                    second.bytesMoved(),
                    "the changed block only: block 8 in place was taken on its earlier hash");
            assertEquals(BLOCK, read.get());
            assertEquals(8 * BLOCK + 3, v2.mismatch(second.model().hostData()));
            second.model().releaseRef();
        }
    }

    /**
     * With reused hashes, a block pulled wrong is still caught by the tensor's hash, and the version is pulled whole.
     */
    @Test
    void withReusedHashesABadPulledBlockIsCaughtAndTheVersionPulledWhole() {
        try (Arena arena = Arena.ofShared();
                ReceiveSlots slots = new ReceiveSlots("m", 1 << 30, 1000)) {
            MemorySegment v1 = random(arena);
            MemorySegment v2 = changed(arena, v1, 4);
            MemorySegment v3 = changed(arena, v2, 6);
            HostLoader reusing = new HostLoader(slots, new Verifier("m", POOL, 2), () -> null, true, null);
            assertLoads(reusing, 1, v1, v1.byteSize(), 0, "a new buffer holds nothing");
            // v3 goes into v1's buffer; the source hands out v2's bytes for blocks 4 and 6 once: block 6 corrupted in
            // flight.
            TransportClient flaky = client(read -> read == 0 ? v2 : v3, new AtomicLong(), new AtomicInteger());
            Loader.Loaded loaded = reusing.load(manifest(3, v3), LOC, flaky);
            assertEquals(2 * BLOCK + v3.byteSize(), loaded.bytesMoved(), "blocks 4 and 6, then the whole version");
            assertEquals(-1, v3.mismatch(loaded.model().hostData()));
            loaded.model().releaseRef();
        }
    }
}
