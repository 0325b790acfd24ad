package io.viper.testing;

import io.viper.hash.ContentHash;
import io.viper.hash.HashAlgorithm;
import io.viper.manifest.BlockList;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A staged checkpoint for transport tests: random bytes split into U8 tensors, with lease counting and a hook that runs
 * when a lease is taken. Owns its arena; close it after the test.
 */
public final class TestStagedCheckpoint implements StagedCheckpoint, AutoCloseable {
    private final Arena arena = Arena.ofShared();
    private final Manifest manifest;
    private final MemorySegment data;
    private final AtomicInteger openLeases = new AtomicInteger();
    private final AtomicInteger leasesTaken = new AtomicInteger();
    private final AtomicInteger maxOpenLeases = new AtomicInteger();
    private final AtomicBoolean recycled = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile Runnable onLease = () -> {};

    /**
     * {@code tensorSizes} bytes each, filled from {@code seed}; hashes are placeholders (transports do not check them).
     */
    public TestStagedCheckpoint(String model, long version, long seed, long... tensorSizes) {
        this(u8Manifest(model, version, tensorSizes), seed);
    }

    /** The data section of {@code manifest} (any tensors, any metadata), filled from {@code seed}. */
    public TestStagedCheckpoint(Manifest manifest, long seed) {
        this.manifest = manifest;
        this.data = arena.allocate(Math.max(1, manifest.totalBytes()), 64).asSlice(0, manifest.totalBytes());
        fill(data, seed);
    }

    private static Manifest u8Manifest(String model, long version, long... tensorSizes) {
        long total = 0;
        List<TensorEntry> entries = new ArrayList<>();
        for (int i = 0; i < tensorSizes.length; i++) {
            entries.add(new TensorEntry(
                    new TensorInfo("t" + i, DType.U8, new long[] {tensorSizes[i]}, total, tensorSizes[i]),
                    new ContentHash(0, i)));
            total += tensorSizes[i];
        }
        return new Manifest(model, version, "test", Manifest.nowMicros(), new LinkedHashMap<>(), entries, List.of());
    }

    /**
     * This checkpoint's manifest with real hashes of its data as it is now: each tensor's CRC32C and its blocks of
     * {@code blockBytes} (what a producer with {@code viper.block.bytes} announces).
     */
    public Manifest manifestWithBlocks(long blockBytes) {
        List<TensorEntry> entries = new ArrayList<>();
        for (TensorEntry e : manifest.tensors()) {
            MemorySegment bytes = data.asSlice(e.info().offset(), e.info().length());
            List<ContentHash> ids = new ArrayList<>();
            for (long at = 0; at < bytes.byteSize(); at += blockBytes) {
                ids.add(BlockList.idOf(bytes.asSlice(at, Math.min(blockBytes, bytes.byteSize() - at))));
            }
            entries.add(new TensorEntry(
                    e.info(), HashAlgorithm.CRC32C.hash(bytes), OptionalLong.empty(), new BlockList(blockBytes, ids)));
        }
        return new Manifest(
                manifest.model(),
                manifest.version(),
                manifest.producerId(),
                manifest.publishedAtMicros(),
                manifest.metadata(),
                entries,
                manifest.locations());
    }

    /** Fills {@code seg} with deterministic pseudo-random bytes. */
    public static void fill(MemorySegment seg, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long n = seg.byteSize();
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
        for (; i < n; i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    @Override
    public String model() {
        return manifest.model();
    }

    @Override
    public long version() {
        return manifest.version();
    }

    @Override
    public Manifest manifest() {
        return manifest;
    }

    @Override
    public MemorySegment data() {
        return data.asReadOnly();
    }

    /** Writable view, for tests that corrupt bytes after publication. */
    public MemorySegment writableData() {
        return data;
    }

    @Override
    public ReadLease tryLease() {
        if (recycled.get()) {
            return null;
        }
        int open = openLeases.incrementAndGet();
        leasesTaken.incrementAndGet();
        maxOpenLeases.accumulateAndGet(open, Math::max);
        onLease.run();
        AtomicBoolean closed = new AtomicBoolean();
        return () -> {
            if (closed.compareAndSet(false, true)) {
                openLeases.decrementAndGet();
            }
        };
    }

    /** Marks the buffer recycled: later leases are refused. */
    public void recycle() {
        recycled.set(true);
    }

    /** Runs {@code hook} on the thread that takes each lease, after taking it. */
    public void onLease(Runnable hook) {
        this.onLease = hook;
    }

    public int openLeases() {
        return openLeases.get();
    }

    public int leasesTaken() {
        return leasesTaken.get();
    }

    public int maxOpenLeases() {
        return maxOpenLeases.get();
    }

    /** Frees the bytes; idempotent (a {@link DeviceStagedCheckpoint} may close it after its creator did). */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            arena.close();
        }
    }
}
