package io.viper.internal.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.Snapshot;
import io.viper.hash.ContentHash;
import io.viper.hash.HashAlgorithm;
import io.viper.internal.CopyHelpers;
import io.viper.internal.TensorHashes;
import io.viper.manifest.BlockList;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * What the staging tests share: a producer's staging without transports ({@link Staging}), snapshots of parts in
 * segments or floats, random layouts and changes, and snapshots that declare their changes.
 */
final class StagingFixture {
    static final long MIB = 1L << 20;
    /** Two hash threads, daemons: shared by the test classes, never shut down. */
    static final ExecutorService POOL =
            Executors.newFixedThreadPool(2, r -> Thread.ofPlatform().daemon().unstarted(r));

    private static final ValueLayout.OfFloat LE_FLOAT =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private StagingFixture() {}

    /** One tensor of a test snapshot: bytes in a segment, or floats. */
    record Part(String name, MemorySegment bytes, float[] floats) {
        long length() {
            return bytes != null ? bytes.byteSize() : 4L * floats.length;
        }

        /** The bytes staging must hold for it. */
        MemorySegment content(Arena arena) {
            if (bytes != null) {
                return bytes;
            }
            MemorySegment s = arena.allocate(length());
            for (int i = 0; i < floats.length; i++) {
                s.set(LE_FLOAT, 4L * i, floats[i]);
            }
            return s;
        }
    }

    static Snapshot snapshot(List<Part> parts) {
        return sink -> {
            for (Part p : parts) {
                if (p.bytes() != null) {
                    sink.add(p.name(), DType.U8, new long[] {p.bytes().byteSize()}, p.bytes());
                } else {
                    sink.addFloats(p.name(), new long[] {p.floats().length}, p.floats());
                }
            }
        };
    }

    /**
     * A producer's staging without transports: a version is staged, hashed, then serves (the one before it retires at
     * once).
     */
    static final class Staging implements AutoCloseable {
        /** The staging budget: a snapshot larger than this is refused after it was described. */
        static final long BUDGET = 1L << 30;

        final StagingCache cache = new StagingCache("m", BUDGET, 1, 5_000, StagingBuffer::retireHandled, null);
        final Stager stager;
        final HashAlgorithm algorithm;
        final long blockBytes;
        final boolean skipUnshared;
        long version;
        /** Whether the version published last carries block ids. */
        boolean lastWithIds;

        Staging(HashAlgorithm algorithm, long blockBytes, boolean compare) {
            this(algorithm, blockBytes, compare, false);
        }

        Staging(HashAlgorithm algorithm, long blockBytes, boolean compare, boolean skipUnshared) {
            this(algorithm, blockBytes, compare, skipUnshared, CopyHelpers.NONE);
        }

        Staging(HashAlgorithm algorithm, long blockBytes, boolean compare, boolean skipUnshared, CopyHelpers helpers) {
            this.algorithm = algorithm;
            this.blockBytes = blockBytes;
            this.skipUnshared = skipUnshared;
            this.stager = new Stager(
                    cache,
                    POOL,
                    2,
                    algorithm,
                    blockBytes,
                    compare,
                    skipUnshared,
                    new GpuStaging("m"),
                    helpers,
                    Optional.empty());
        }

        /**
         * Stages {@code parts} as the next version, as the pipeline would; returns what it copied and found unchanged.
         */
        StagingCopy.Copied publish(List<Part> parts, Arena arena) {
            return publish(snapshot(parts), parts, arena);
        }

        /** Stages {@code snapshot}, whose tensors hold the bytes of {@code parts}. */
        StagingCopy.Copied publish(Snapshot snapshot, List<Part> parts, Arena arena) {
            Stager.Staged staged = stager.stage(snapshot, ++version);
            staged.hostCopy().run();
            try (TensorHashes hashes = staged.hashes();
                    BlockIds blocks = staged.blocks()) {
                ContentHash[] tensorHashes = hashes.await();
                List<BlockList> blockIds = blocks.await();
                lastWithIds = blockBytes > 0 && !blockIds.stream().allMatch(b -> b == BlockList.NONE);
                if (blockBytes > 0 && !lastWithIds) {
                    assertTrue(skipUnshared, "v" + version + " went without block ids although none may be skipped");
                    assertEquals(
                            0,
                            staged.copied().unchangedBytes(),
                            "v" + version + " went without block ids although it shares bytes");
                }
                assertStagedFromScratch(parts, staged, tensorHashes, blockIds, arena);
                cache.withdraw(cache.activate(staged.buffer(), staged.content()));
            }
            return staged.copied();
        }

        /** The buffer holds the parts' bytes, and every hash and block id is that of those bytes. */
        void assertStagedFromScratch(
                List<Part> parts,
                Stager.Staged staged,
                ContentHash[] tensorHashes,
                List<BlockList> blockIds,
                Arena arena) {
            MemorySegment data = staged.buffer().data();
            for (int i = 0; i < parts.size(); i++) {
                TensorInfo info = staged.infos().get(i);
                MemorySegment expected = parts.get(i).content(arena);
                String what = "v" + version + " tensor " + info.name();
                assertEquals(
                        -1,
                        expected.mismatch(data.asSlice(info.offset(), info.length())),
                        what + ": the buffer holds the snapshot's bytes");
                assertEquals(algorithm.hash(expected), tensorHashes[i], what + ": its hash");
                if (blockBytes > 0 && !lastWithIds) {
                    continue; // a version that shared nothing: no ids to check
                }
                List<ContentHash> ids = new ArrayList<>();
                for (long start = 0; blockBytes > 0 && start < info.length(); start += blockBytes) {
                    ids.add(BlockList.ID_ALGORITHM.hash(
                            expected.asSlice(start, Math.min(blockBytes, info.length() - start))));
                }
                assertEquals(ids, blockIds.get(i).ids(), what + ": its block ids");
            }
        }

        @Override
        public void close() {
            cache.close();
        }
    }

    static MemorySegment randomBytes(Arena arena, long n, SplittableRandom rnd) {
        MemorySegment s = arena.allocate(Math.max(1, n)).asSlice(0, n);
        for (long i = 0; i < n; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        return s;
    }

    /** Tensors of random sizes: up to 3 MiB and a bit (tails shorter than a block), some empty, some floats. */
    static List<Part> randomLayout(Arena arena, SplittableRandom rnd) {
        List<Part> parts = new ArrayList<>();
        int n = 1 + rnd.nextInt(5);
        for (int i = 0; i < n; i++) {
            long len = switch (rnd.nextInt(4)) {
                case 0 -> rnd.nextInt(3) * MIB;
                case 1 -> rnd.nextLong(4096);
                default -> rnd.nextLong(3 * MIB + 5000);
            };
            if (rnd.nextInt(4) == 0) {
                float[] f = new float[(int) (len / 4)];
                for (int k = 0; k < f.length; k++) {
                    f[k] = (float) rnd.nextGaussian();
                }
                parts.add(new Part("f" + i, null, f));
            } else {
                parts.add(new Part("t" + i, randomBytes(arena, len, rnd), null));
            }
        }
        return parts;
    }

    /**
     * The same layout with fresh memory: a few bytes changed at random places (or none), sometimes all of one tensor.
     */
    static List<Part> changed(List<Part> parts, Arena arena, SplittableRandom rnd) {
        List<Part> out = new ArrayList<>();
        for (Part p : parts) {
            if (p.bytes() != null) {
                MemorySegment s = arena.allocate(Math.max(1, p.length()))
                        .asSlice(0, p.length())
                        .copyFrom(p.bytes());
                if (rnd.nextInt(5) == 0) {
                    s.copyFrom(randomBytes(arena, p.length(), rnd));
                } else {
                    for (int k = rnd.nextInt(3); k > 0 && p.length() > 0; k--) {
                        long at = rnd.nextLong(p.length());
                        s.set(ValueLayout.JAVA_BYTE, at, (byte) ~s.get(ValueLayout.JAVA_BYTE, at));
                    }
                }
                out.add(new Part(p.name(), s, null));
            } else {
                float[] f = p.floats().clone();
                if (f.length > 0 && rnd.nextBoolean()) {
                    f[rnd.nextInt(f.length)] += 1;
                }
                out.add(new Part(p.name(), null, f));
            }
        }
        return out;
    }

    /** A snapshot of {@code parts}, each tensor (all in segments) declaring {@code changes.get(i)}. */
    static Snapshot declaring(List<Part> parts, List<Snapshot.Changes> changes) {
        return sink -> {
            for (int i = 0; i < parts.size(); i++) {
                Part p = parts.get(i);
                sink.add(p.name(), DType.U8, new long[] {p.length()}, p.bytes(), changes.get(i));
            }
        };
    }

    /** A copy of {@code bytes} with the byte at {@code at} flipped. */
    static MemorySegment flipped(Arena arena, MemorySegment bytes, long at) {
        MemorySegment s = arena.allocate(bytes.byteSize()).copyFrom(bytes);
        s.set(ValueLayout.JAVA_BYTE, at, (byte) ~s.get(ValueLayout.JAVA_BYTE, at));
        return s;
    }
}
