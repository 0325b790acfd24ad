package io.viper.internal.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.hash.ContentHash;
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
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The PFS loader maps a version in place, unless the version has blocks and the serving one is in a receive buffer of
 * the consumer: then only the blocks that buffer lacks are read into another (a mapping would bring in every block).
 */
class MappedLoaderTest {
    private static final CountingPool POOL = new CountingPool(2);
    private static final long BLOCK = 1L << 20;
    private static final Location LOC = new Location(URI.create("file:///pfs/m/2/model.safetensors"), Tier.PFS);

    @AfterAll
    static void stop() {
        POOL.shutdown();
    }

    /** Version {@code version}: one tensor of {@code data}'s bytes, with block ids when {@code blocks}. */
    private static Manifest manifest(long version, MemorySegment data, boolean blocks) {
        TensorInfo info = new TensorInfo("w", DType.U8, new long[] {data.byteSize()}, 0, data.byteSize());
        List<ContentHash> ids = new ArrayList<>();
        for (long at = 0; blocks && at < data.byteSize(); at += BLOCK) {
            ids.add(BlockList.idOf(data.asSlice(at, Math.min(BLOCK, data.byteSize() - at))));
        }
        BlockList list = blocks ? new BlockList(BLOCK, ids) : BlockList.NONE;
        TensorEntry e = new TensorEntry(info, HashAlgorithm.CRC32C.hash(data), OptionalLong.empty(), list);
        return new Manifest("m", version, "test", 0, new LinkedHashMap<>(), List.of(e), List.of(LOC));
    }

    /** Maps {@code source} (counting maps) and reads from it (counting bytes). */
    private static TransportClient client(MemorySegment source, AtomicInteger maps, AtomicLong read) {
        return new TransportClient() {
            @Override
            public void read(Manifest manifest, Location location, List<ByteRange> ranges, MemorySegment destination) {
                for (ByteRange r : ranges) {
                    MemorySegment.copy(source, r.sourceOffset(), destination, r.destinationOffset(), r.length());
                    read.addAndGet(r.length());
                }
            }

            @Override
            public Optional<MappedData> map(Manifest manifest, Location location) {
                maps.incrementAndGet();
                return Optional.of(new MappedData() {
                    @Override
                    public MemorySegment data() {
                        return source.asReadOnly();
                    }

                    @Override
                    public void close() {}
                });
            }

            @Override
            public void close() {}
        };
    }

    private static MemorySegment version(Arena arena, int seed) {
        MemorySegment v = arena.allocate(4 * BLOCK);
        for (long i = 0; i < v.byteSize(); i += 8) {
            v.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 31 + seed);
        }
        return v;
    }

    /** A copy of {@code v1} with its second block changed. */
    private static MemorySegment withBlockChanged(Arena arena, MemorySegment v1) {
        MemorySegment v2 = arena.allocate(v1.byteSize()).copyFrom(v1);
        v2.set(ValueLayout.JAVA_BYTE, BLOCK + 1, (byte) ~v2.get(ValueLayout.JAVA_BYTE, BLOCK + 1));
        return v2;
    }

    private record Case(Loader.Loaded loaded, int maps, long read) {}

    /** Loads v2 ({@code blocks} or not) while {@code serving} (v1, a block of it changed) serves. */
    private static Case load(boolean blocks, LoadedModel serving, MemorySegment v2) {
        return load(blocks, serving, v2, false);
    }

    /** As above, by a consumer that relays versions to others when {@code relaying}. */
    private static Case load(boolean blocks, LoadedModel serving, MemorySegment v2, boolean relaying) {
        try (ReceiveSlots slots = new ReceiveSlots("m", 1 << 30, 1000)) {
            Verifier verifier = new Verifier("m", POOL, 2);
            Supplier<LoadedModel> current = () -> serving != null && serving.tryRetain() ? serving : null;
            MappedLoader loader =
                    new MappedLoader(verifier, new HostLoader(slots, verifier, current), current, () -> relaying);
            AtomicInteger maps = new AtomicInteger();
            AtomicLong read = new AtomicLong();
            Loader.Loaded loaded = loader.load(manifest(2, v2, blocks), LOC, client(v2, maps, read));
            assertEquals(-1, v2.mismatch(loaded.model().hostData()), "v2 is what serves");
            Case c = new Case(loaded, maps.get(), read.get());
            loaded.model().releaseRef();
            return c;
        }
    }

    @Test
    void withNothingServingOrAMappingServingTheVersionIsMapped() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment v1 = version(arena, 1);
            MemorySegment v2 = withBlockChanged(arena, v1);

            Case first = load(true, null, v2);
            assertEquals(1, first.maps());
            assertEquals(0, first.read());
            assertTrue(first.loaded().model().mappedInPlace());
            assertEquals(v2.byteSize(), first.loaded().bytesMoved(), "mapped cold: every byte read from the location");

            LoadedModel mapped = new LoadedModel(manifest(1, v1, true), v1, () -> {}, true);
            Case next = load(true, mapped, v2);
            assertEquals(1, next.maps(), "the serving version is a mapping too: the blocks it shares are in memory");
            assertEquals(BLOCK, next.loaded().bytesMoved(), "only the changed block's pages were not mapped already");
            assertEquals(v2.byteSize() - BLOCK, next.loaded().bytesReused());
            assertEquals(1, mapped.references(), "the loader gave its reference on the serving version back");
        }
    }

    @Test
    void withItsOwnBufferServingAVersionWithBlocksReadsOnlyTheBlocksItLacks() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment v1 = version(arena, 1);
            MemorySegment v2 = withBlockChanged(arena, v1);
            LoadedModel own = new LoadedModel(
                    manifest(1, v1, true), arena.allocate(v1.byteSize()).copyFrom(v1), () -> {});

            Case delta = load(true, own, v2);
            assertEquals(0, delta.maps(), "not mapped");
            assertEquals(BLOCK, delta.read(), "only the changed block read");
            assertFalse(delta.loaded().model().mappedInPlace());
            assertEquals(1, own.references());

            Case file = load(false, own, v2);
            assertEquals(1, file.maps(), "a version without blocks has nothing to reuse: it is mapped");

            Case relayed = load(true, null, v2, true);
            assertEquals(0, relayed.maps(), "a relaying consumer serves others from a receive buffer");
            assertEquals(v2.byteSize(), relayed.read());
        }
    }
}
