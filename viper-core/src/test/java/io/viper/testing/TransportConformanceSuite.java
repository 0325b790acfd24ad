package io.viper.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The conformance suite every transport passes (Netty-style): subclasses name the provider and, where the producer side
 * is not a {@link TransportServer} (the PFS), override {@link #serve}, {@link #withdraw} and {@link #killProducer}.
 *
 * <p>Hash verification happens above the transport (the consumer checks every tensor); here the suite checks that bytes
 * arrive exactly, leases are honoured, and failures are retriable and fast.
 */
public abstract class TransportConformanceSuite {
    protected static final Duration TIMEOUT = Duration.ofSeconds(60);

    protected TransportProvider provider;
    protected TransportServer server;
    protected TransportClient client;
    protected final List<AutoCloseable> closeables = new ArrayList<>();

    /** The transport under test. */
    protected abstract TransportProvider provider();

    /** Where the server binds, e.g. {@code tcp://127.0.0.1:0}. */
    protected URI bindUri() {
        return URI.create(provider.scheme() + "://127.0.0.1:0");
    }

    protected ViperConfig config() {
        return ViperConfig.defaults();
    }

    @BeforeEach
    void openTransport() {
        provider = provider();
        Assumptions.assumeTrue(
                provider.unavailableReason().isEmpty(),
                () -> provider.scheme() + " transport unavailable here: "
                        + provider.unavailableReason().orElse(""));
        client = provider.openClient(config());
    }

    @AfterEach
    void closeTransport() throws Exception {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    /** Makes {@code staged} readable and returns the location consumers use. */
    protected Location serve(TestStagedCheckpoint staged) {
        if (server == null) {
            server = provider.openServer(bindUri(), config());
        }
        server.expose(staged);
        return server.location();
    }

    /** Stops serving {@code staged}. */
    protected void withdraw(TestStagedCheckpoint staged) {
        server.withdraw(staged);
    }

    /** The producer goes away (process killed, server closed). */
    protected void killProducer() {
        server.close();
    }

    protected TestStagedCheckpoint staged(long version, long seed, long... sizes) {
        TestStagedCheckpoint s = new TestStagedCheckpoint("conf", version, seed, sizes);
        closeables.add(s);
        return s;
    }

    protected MemorySegment buffer(long size) {
        Arena arena = Arena.ofShared();
        closeables.add(arena);
        return arena.allocate(Math.max(1, size), 64).asSlice(0, size);
    }

    protected static List<ByteRange> whole(Manifest m) {
        return List.of(new ByteRange(0, m.totalBytes(), 0));
    }

    protected static void assertSameBytes(MemorySegment expected, MemorySegment actual, String what) {
        assertEquals(expected.byteSize(), actual.byteSize(), what + ": size");
        long mismatch = expected.mismatch(actual);
        assertEquals(-1, mismatch, what + ": first differing byte");
    }

    @Test
    protected void fetchWholeCheckpoint() {
        TestStagedCheckpoint s = staged(1, 11, 1000, 64 * 1024 + 3, 5, 0, 300_000);
        Location loc = serve(s);
        MemorySegment dst = buffer(s.manifest().totalBytes());
        assertTimeoutPreemptively(TIMEOUT, () -> client.read(s.manifest(), loc, whole(s.manifest()), dst));
        assertSameBytes(s.data(), dst, "whole checkpoint");
        assertTrue(s.leasesTaken() >= 1, "a read lease was taken");
        assertEquals(0, s.openLeases(), "every lease was released after the read");
    }

    @Test
    protected void arrivalsCoverEveryByteReadOnce() {
        TestStagedCheckpoint s = staged(1, 21, 9L * 1024 * 1024 + 5, 100, 3000);
        Location loc = serve(s);
        long total = s.manifest().totalBytes();
        MemorySegment dst = buffer(total);
        List<long[]> arrived = Collections.synchronizedList(new ArrayList<>());
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> client.read(
                        s.manifest(),
                        loc,
                        whole(s.manifest()),
                        dst,
                        (offset, length) -> arrived.add(new long[] {offset, length})));
        assertSameBytes(s.data(), dst, "checkpoint read with arrivals");
        List<long[]> sorted = new ArrayList<>(arrived);
        sorted.sort(Comparator.comparingLong(a -> a[0]));
        long next = 0;
        for (long[] a : sorted) {
            assertEquals(next, a[0], "arrivals are contiguous and do not overlap");
            next += a[1];
        }
        assertEquals(total, next, "every byte was reported as arrived");
    }

    @Test
    protected void fetchLargeCheckpointAcrossChunkBoundaries() {
        TestStagedCheckpoint s = staged(1, 12, 48L * 1024 * 1024 + 17, 16L * 1024 * 1024 - 1);
        Location loc = serve(s);
        MemorySegment dst = buffer(s.manifest().totalBytes());
        assertTimeoutPreemptively(TIMEOUT, () -> client.read(s.manifest(), loc, whole(s.manifest()), dst));
        assertSameBytes(s.data(), dst, "64 MiB checkpoint");
    }

    /**
     * A delta update's read: scattered 1 MiB blocks and a short tail, each to its own offset in a buffer that already
     * holds the other bytes; those must stay untouched, and arrivals cover the ranges only.
     */
    @Test
    protected void scatteredBlocksLandInPlaceAndNothingElseIsWritten() {
        long mib = 1L << 20;
        TestStagedCheckpoint s = staged(1, 17, 5 * mib + 3, 7 * mib + 100);
        Location loc = serve(s);
        long total = s.manifest().totalBytes();
        List<ByteRange> ranges = List.of(
                new ByteRange(mib, mib, mib),
                new ByteRange(4 * mib, 2 * mib, 4 * mib),
                new ByteRange(9 * mib, mib, 9 * mib),
                new ByteRange(12 * mib, total - 12 * mib, 12 * mib));
        MemorySegment dst = buffer(total);
        dst.fill((byte) 0x5a);
        List<long[]> arrived = Collections.synchronizedList(new ArrayList<>());
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> client.read(
                        s.manifest(), loc, ranges, dst, (offset, length) -> arrived.add(new long[] {offset, length})));
        long next = 0;
        for (ByteRange r : ranges) {
            for (long b = next; b < r.destinationOffset(); b += mib) {
                long n = Math.min(mib, r.destinationOffset() - b);
                assertEquals(
                        -1,
                        dst.asSlice(b, n).mismatch(buffer(n).fill((byte) 0x5a)),
                        "bytes outside the ranges at " + b + " are untouched");
            }
            assertSameBytes(
                    s.data().asSlice(r.sourceOffset(), r.length()),
                    dst.asSlice(r.destinationOffset(), r.length()),
                    "range " + r);
            next = r.destinationOffset() + r.length();
        }
        long reported = 0;
        for (long[] a : arrived) {
            assertTrue(
                    ranges.stream()
                            .anyMatch(r ->
                                    a[0] >= r.destinationOffset() && a[0] + a[1] <= r.destinationOffset() + r.length()),
                    "arrival " + a[0] + "+" + a[1] + " lies inside a range");
            reported += a[1];
        }
        assertEquals(
                ranges.stream().mapToLong(ByteRange::length).sum(),
                reported,
                "every byte of the ranges was reported once");
    }

    @Test
    protected void fetchSubsetOfTensors() {
        TestStagedCheckpoint s = staged(1, 13, 4096, 777, 100_000, 33, 8);
        Location loc = serve(s);
        var t1 = s.manifest().tensors().get(1).info();
        var t3 = s.manifest().tensors().get(3).info();
        List<ByteRange> ranges = List.of(
                new ByteRange(t3.offset(), t3.length(), 0), new ByteRange(t1.offset(), t1.length(), t3.length()));
        MemorySegment dst = buffer(t1.length() + t3.length());
        assertTimeoutPreemptively(TIMEOUT, () -> client.read(s.manifest(), loc, ranges, dst));
        assertSameBytes(s.data().asSlice(t3.offset(), t3.length()), dst.asSlice(0, t3.length()), "tensor t3");
        assertSameBytes(s.data().asSlice(t1.offset(), t1.length()), dst.asSlice(t3.length(), t1.length()), "tensor t1");
    }

    @Test
    protected void concurrentConsumers() throws Exception {
        TestStagedCheckpoint s = staged(1, 14, 3L * 1024 * 1024 + 5, 1024);
        Location loc = serve(s);
        int consumers = 4;
        ExecutorService pool = Executors.newFixedThreadPool(consumers);
        try {
            List<Future<MemorySegment>> results = new ArrayList<>();
            List<TransportClient> clients = new ArrayList<>();
            for (int i = 0; i < consumers; i++) {
                TransportClient c = i == 0 ? client : provider.openClient(config());
                if (i > 0) {
                    clients.add(c);
                }
                MemorySegment dst = buffer(s.manifest().totalBytes());
                results.add(pool.submit(() -> {
                    c.read(s.manifest(), loc, whole(s.manifest()), dst);
                    return dst;
                }));
            }
            for (Future<MemorySegment> f : results) {
                assertSameBytes(s.data(), f.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS), "concurrent read");
            }
            clients.forEach(TransportClient::close);
        } finally {
            pool.shutdownNow();
        }
        assertTrue(s.leasesTaken() >= consumers, "each consumer took a lease");
        assertEquals(0, s.openLeases());
    }

    @Test
    protected void leaseIsHeldDuringTheReadAndBlocksRecycling() {
        TestStagedCheckpoint s = staged(1, 15, 2L * 1024 * 1024);
        int[] openDuringRead = new int[1];
        s.onLease(() -> openDuringRead[0] = s.openLeases());
        Location loc = serve(s);
        MemorySegment dst = buffer(s.manifest().totalBytes());
        assertTimeoutPreemptively(TIMEOUT, () -> client.read(s.manifest(), loc, whole(s.manifest()), dst));
        assertTrue(openDuringRead[0] >= 1, "lease open while the bytes were read");
        assertEquals(0, s.openLeases(), "lease released");
        // Recycled (the staging cache refuses new leases): NOT_FOUND, and the consumer falls back to the next location.
        s.recycle();
        MemorySegment dst2 = buffer(s.manifest().totalBytes());
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> assertThrows(
                        ViperNotFoundException.class, () -> client.read(s.manifest(), loc, whole(s.manifest()), dst2)));
    }

    @Test
    protected void withdrawnVersionIsRefusedAsNotFound() {
        TestStagedCheckpoint v1 = staged(1, 16, 4096);
        TestStagedCheckpoint v2 = staged(2, 17, 4096);
        Location loc1 = serve(v1);
        Location loc2 = serve(v2);
        withdraw(v1);
        MemorySegment dst = buffer(4096);
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> assertThrows(
                        ViperNotFoundException.class,
                        () -> client.read(v1.manifest(), loc1, whole(v1.manifest()), dst)));
        assertTimeoutPreemptively(TIMEOUT, () -> client.read(v2.manifest(), loc2, whole(v2.manifest()), dst));
        assertSameBytes(v2.data(), dst, "version 2 still served");
    }

    @Test
    protected void producerGoneMidTransferFailsRetriably() {
        TestStagedCheckpoint s = staged(1, 18, 64L * 1024 * 1024);
        // The producer dies right after granting the lease, before or while the bytes move.
        s.onLease(() -> Thread.ofPlatform().daemon().start(this::killProducer));
        Location loc = serve(s);
        MemorySegment dst = buffer(s.manifest().totalBytes());
        assertTimeoutPreemptively(TIMEOUT, () -> {
            try {
                client.read(s.manifest(), loc, whole(s.manifest()), dst);
                // The transfer may win the race; then the bytes must be exact.
                assertSameBytes(s.data(), dst, "transfer that finished before the producer died");
            } catch (RetriableViperException | ViperNotFoundException expected) {
                // A producer closing down withdraws what it served: a lease that races the shutdown
                // may be refused as withdrawn (NOT_FOUND) instead of failing mid-transfer.
                assertNotNull(expected.getMessage());
            }
        });
        // Afterwards the producer is gone for sure: the next read fails retriably and quickly.
        MemorySegment dst2 = buffer(s.manifest().totalBytes());
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> assertThrows(
                        RetriableViperException.class,
                        () -> client.read(s.manifest(), loc, whole(s.manifest()), dst2)));
    }

    @Test
    protected void emptyCheckpointAndEmptyRanges() {
        TestStagedCheckpoint s = staged(1, 19, 0, 10);
        Location loc = serve(s);
        MemorySegment dst = buffer(10);
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> client.read(s.manifest(), loc, List.of(new ByteRange(0, 0, 0), new ByteRange(0, 10, 0)), dst));
        assertSameBytes(s.data(), dst, "checkpoint with an empty tensor");
    }
}
