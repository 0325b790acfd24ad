package io.viper.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

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
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** The host loader's delta: which bytes it copies from its base and which it reads, and when it has no base. */
class HostLoaderDeltaTest {
    private static final ExecutorService POOL = Executors.newFixedThreadPool(2);
    private static final long BLOCK = 4096;
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
        TensorEntry e = new TensorEntry(info, HashAlgorithm.CRC32C.hash(data), OptionalLong.empty(), new BlockList(BLOCK, ids));
        return new Manifest("m", version, "test", 0, new LinkedHashMap<>(), List.of(e), List.of(LOC));
    }

    /** Reads from {@code source}, counting the bytes asked for. */
    private static TransportClient client(MemorySegment source, AtomicLong bytesRead) {
        return new TransportClient() {
            @Override
            public void read(Manifest manifest, Location location, List<ByteRange> ranges, MemorySegment destination) {
                for (ByteRange r : ranges) {
                    MemorySegment.copy(source, r.sourceOffset(), destination, r.destinationOffset(), r.length());
                    bytesRead.addAndGet(r.length());
                }
            }

            @Override
            public void close() {
            }
        };
    }

    @Test
    void aBaseCopiesItsBlocksAndARecycledOneMeansAFullPull() {
        try (Arena arena = Arena.ofShared(); ReceiveSlots slots = new ReceiveSlots("m", 1 << 20, 1000)) {
            MemorySegment v1 = arena.allocate(10 * BLOCK + 7);
            SplittableRandom rnd = new SplittableRandom(3);
            for (long i = 0; i < v1.byteSize(); i++) {
                v1.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            MemorySegment v2 = arena.allocate(v1.byteSize()).copyFrom(v1);
            v2.set(ValueLayout.JAVA_BYTE, 4 * BLOCK + 1, (byte) 0x5a);
            v2.set(ValueLayout.JAVA_BYTE, 4 * BLOCK + 2, (byte) 0xa5);
            Manifest m1 = manifest(1, v1);
            Manifest m2 = manifest(2, v2);
            Verifier verifier = new Verifier("m", POOL, 2);

            LoadedModel base = new LoadedModel(m1, arena.allocate(v1.byteSize()).copyFrom(v1), () -> { });
            HostLoader withBase = new HostLoader(slots, verifier, () -> base.tryRetain() ? base : null);
            AtomicLong read = new AtomicLong();
            Loader.Loaded delta = withBase.load(m2, LOC, client(v2, read));
            assertEquals(BLOCK, delta.bytesMoved(), "only the changed block moved");
            assertEquals(v2.byteSize() - BLOCK, delta.bytesReused());
            assertEquals(BLOCK, read.get());
            assertEquals(-1, v2.mismatch(delta.model().hostData()));
            assertEquals(1, base.references(), "the loader gave its reference on the base back");
            delta.model().releaseRef();

            base.releaseRef(); // recycled: its buffer went back, nothing may be copied from it
            assertFalse(base.tryRetain());
            read.set(0);
            Loader.Loaded full = withBase.load(m2, LOC, client(v2, read));
            assertEquals(v2.byteSize(), full.bytesMoved(), "without a base every byte is pulled");
            assertEquals(0, full.bytesReused());
            assertEquals(v2.byteSize(), read.get());
            assertEquals(-1, v2.mismatch(full.model().hostData()));
            full.model().releaseRef();
        }
    }
}
