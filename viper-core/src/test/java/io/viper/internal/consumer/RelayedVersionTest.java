package io.viper.internal.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.errors.ViperCorruptDataException;
import io.viper.hash.ContentHash;
import io.viper.hash.HashAlgorithm;
import io.viper.internal.ViperMetrics;
import io.viper.manifest.BlockList;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.ByteRange;
import io.viper.spi.ReadLease;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A version as a consumer relays it: readable unit by unit as each verifies against the manifest's block ids, a unit
 * with a wrong id never readable and its bytes counted missing, readers woken as units land, the buffer handed back
 * only when the last read lease closes.
 */
class RelayedVersionTest {
    private static final long BLOCK = 1024;

    /** The data section of {@code data} with block ids of {@code BLOCK} bytes. */
    private static Manifest manifest(MemorySegment data, long[] offsets, long[] lengths) {
        List<TensorEntry> entries = new ArrayList<>();
        for (int i = 0; i < offsets.length; i++) {
            MemorySegment t = data.asSlice(offsets[i], lengths[i]);
            List<ContentHash> ids = new ArrayList<>();
            for (long b = 0; b < lengths[i]; b += BLOCK) {
                ids.add(BlockList.idOf(t.asSlice(b, Math.min(BLOCK, lengths[i] - b))));
            }
            entries.add(new TensorEntry(
                    new TensorInfo("t" + i, DType.U8, new long[] {lengths[i]}, offsets[i], lengths[i]),
                    HashAlgorithm.CRC32C.hash(t),
                    OptionalLong.empty(),
                    new BlockList(BLOCK, ids)));
        }
        return new Manifest("m", 1, "p", 0, new LinkedHashMap<>(), entries, List.of());
    }

    @Test
    void unitsBecomeReadableAsTheyVerifyAndABadOneIsMissing() {
        try (Arena arena = Arena.ofConfined()) {
            long[] offsets = {0, 3584};
            long[] lengths = {3584, 2048};
            MemorySegment source = arena.allocate(offsets[1] + lengths[1]);
            for (long i = 0; i < source.byteSize(); i++) {
                source.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31));
            }
            Manifest m = manifest(source, offsets, lengths);
            MemorySegment dst = arena.allocate(source.byteSize());
            RelayedVersion v = RelayedVersion.expose(m, dst, List.of(), new ViperMetrics(new SimpleMeterRegistry()));
            AtomicInteger woken = new AtomicInteger();
            v.onReadable(woken::incrementAndGet);
            List<long[]> verified = new ArrayList<>();
            UnitCheck check = new UnitCheck(m, dst, (o, n) -> verified.add(new long[] {o, n}), v);
            assertEquals(0, v.readable(0, BLOCK));

            MemorySegment.copy(source, 0, dst, 0, 1500);
            check.arrived(0, 1500); // block 0 whole, block 1 half
            assertEquals(BLOCK, v.readable(0, dst.byteSize()), "block 0 verified, block 1 not yet");
            assertEquals(1, woken.get(), "the waiting reader was woken");

            MemorySegment.copy(source, 1500, dst, 1500, 548);
            dst.set(ValueLayout.JAVA_BYTE, 1600, (byte) 0); // block 1 arrives wrong
            boolean caught = false;
            try {
                check.arrived(1500, 548);
            } catch (ViperCorruptDataException e) {
                caught = e.getMessage().contains("t0' block 1");
            }
            assertTrue(caught, "block 1 failed its id");
            assertEquals(BLOCK, v.readable(0, dst.byteSize()), "a bad block is never readable");
            List<ByteRange> missing = check.missing(List.of(new ByteRange(0, dst.byteSize(), 0)));
            assertEquals(BLOCK, missing.getFirst().sourceOffset(), "everything after block 0 is to read again");

            ReadLease lease = v.tryLease();
            AtomicInteger released = new AtomicInteger();
            v.retire(released::incrementAndGet);
            assertEquals(0, released.get(), "a reader still holds the buffer");
            assertNull(v.tryLease(), "no new reader after retirement");
            lease.close();
            assertEquals(1, released.get(), "handed back with the last lease");
        }
    }

    @Test
    void copiedBlocksAreReadableAtOnceAndAnAbandonedVersionSaysSo() {
        try (Arena arena = Arena.ofConfined()) {
            long[] offsets = {0, 3584};
            long[] lengths = {3584, 2048};
            MemorySegment dst = arena.allocate(offsets[1] + lengths[1]);
            Manifest m = manifest(dst, offsets, lengths);
            RelayedVersion v = RelayedVersion.expose(m, dst, List.of(), new ViperMetrics(new SimpleMeterRegistry()));
            v.markReady(3 * BLOCK, 512 + 100); // t0's last, short block, and a part of t1's first
            assertEquals(512, v.readable(3 * BLOCK, 4096), "t0's last block, not the part of t1's first");
            v.markReady(0, 3 * BLOCK);
            assertEquals(3584, v.readable(0, 8192), "t0 whole");
            v.abandon();
            assertEquals(-1, v.readable(0, 1), "abandoned: nothing more will be readable");
        }
    }
}
