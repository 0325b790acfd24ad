package io.viper.transfer.pfs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.ReadLease;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.testing.TestStagedCheckpoint;
import io.viper.testing.TransportConformanceSuite;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The transport conformance suite run against {@code file://}: the producer side is the PFS repository, so
 * {@link #serve} stores the staged checkpoint (holding a read lease while it copies, as the producer's flush does),
 * {@link #withdraw} deletes the version directory (what retention does) and {@link #killProducer} deletes every stored
 * version: for a file, "the producer is gone" means "the file is gone", which readers must report as a retriable error.
 *
 * <p>This class sits in the suite's package because the suite's test methods are package-private: only a subclass in
 * the same package can override the three tests whose lease semantics do not apply to a file (each override says why
 * and checks the file-specific equivalent instead).
 */
class FileTransportConformanceTest extends TransportConformanceSuite {
    @TempDir
    Path root;

    private CheckpointRepository repository;
    private final Map<TestStagedCheckpoint, Location> stored = new ConcurrentHashMap<>();

    @Override
    protected TransportProvider provider() {
        return new FileTransportProvider();
    }

    private synchronized CheckpointRepository repository() {
        if (repository == null) {
            repository = new PfsRepositoryProvider()
                    .open(root.toUri(), ViperConfig.of(Map.of("viper.pfs.retention", "100")));
            closeables.add(repository);
        }
        return repository;
    }

    /** Stores {@code staged} in the repository, holding a read lease for the copy as the producer's flush does. */
    @Override
    protected Location serve(TestStagedCheckpoint staged) {
        ReadLease lease = staged.tryLease();
        assertNotNull(lease, "staged checkpoint leasable");
        try {
            Location location = repository().store(staged.manifest(), staged);
            assertEquals(Tier.PFS, location.tier());
            stored.put(staged, location);
            return location;
        } finally {
            lease.close();
        }
    }

    /** Deletes the version directory, as retention does. */
    @Override
    protected void withdraw(TestStagedCheckpoint staged) {
        deleteTree(versionDir(stored.get(staged)));
    }

    /** The PFS copy disappears: every stored version is deleted. */
    @Override
    protected void killProducer() {
        for (Location l : stored.values()) {
            deleteTree(versionDir(l));
        }
    }

    private static Path versionDir(Location location) {
        return Path.of(location.uri()).getParent();
    }

    private static void deleteTree(Path top) {
        if (!Files.exists(top)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(top)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Overridden: the file client takes no lease on the producer's staging buffer, because its bytes come from the
     * file; a recycled staging buffer must not break PFS reads (that is what the PFS path is for). The file-specific
     * equivalent: the store holds a lease while it copies the staged bytes and releases it; after the buffer is
     * recycled the file still serves exact bytes; and "the file exists" is the lease: once the version is deleted a new
     * read fails with NOT_FOUND, while a consumer that mapped the file before keeps reading exact bytes.
     */
    @Override
    @Test
    protected void leaseIsHeldDuringTheReadAndBlocksRecycling() {
        TestStagedCheckpoint s = staged(1, 15, 2L * 1024 * 1024);
        int[] openDuringStore = new int[1];
        s.onLease(() -> openDuringStore[0] = s.openLeases());
        Location loc = serve(s);
        assertTrue(openDuringStore[0] >= 1, "lease open while the staged bytes were copied to the file");
        assertEquals(0, s.openLeases(), "lease released after the store");

        s.recycle();
        MemorySegment dst = buffer(s.manifest().totalBytes());
        assertTimeoutPreemptively(TIMEOUT, () -> client.read(s.manifest(), loc, whole(s.manifest()), dst));
        assertSameBytes(s.data(), dst, "read from the file after the staging buffer was recycled");

        TransportClient.MappedData mapped = client.map(s.manifest(), loc).orElseThrow();
        closeables.add(mapped);
        withdraw(s);
        MemorySegment dst2 = buffer(s.manifest().totalBytes());
        ViperNotFoundException e = assertThrows(
                ViperNotFoundException.class, () -> client.read(s.manifest(), loc, whole(s.manifest()), dst2));
        assertTrue(e.getMessage().contains(Path.of(loc.uri()).toString()), e.getMessage());
        assertSameBytes(s.data(), mapped.data(), "mapping taken before the deletion");
    }

    /**
     * Overridden: the base test counts one producer lease per consumer, which the file transport does not take (see
     * {@link #leaseIsHeldDuringTheReadAndBlocksRecycling}). Here four consumers read and map the same file at once;
     * every one gets exact bytes, and the only lease is the store's.
     */
    @Override
    @Test
    protected void concurrentConsumers() throws Exception {
        TestStagedCheckpoint s = staged(1, 14, 3L * 1024 * 1024 + 5, 1024);
        Location loc = serve(s);
        int consumers = 4;
        ExecutorService pool = Executors.newFixedThreadPool(consumers);
        List<TransportClient> clients = new ArrayList<>();
        try {
            List<Future<MemorySegment>> results = new ArrayList<>();
            for (int i = 0; i < consumers; i++) {
                TransportClient c = i == 0 ? client : provider.openClient(config());
                if (i > 0) {
                    clients.add(c);
                }
                MemorySegment dst = buffer(s.manifest().totalBytes());
                boolean viaMap = i % 2 == 1;
                results.add(pool.submit(() -> {
                    if (viaMap) {
                        try (TransportClient.MappedData m =
                                c.map(s.manifest(), loc).orElseThrow()) {
                            MemorySegment.copy(m.data(), 0, dst, 0, dst.byteSize());
                        }
                    } else {
                        c.read(s.manifest(), loc, whole(s.manifest()), dst);
                    }
                    return dst;
                }));
            }
            for (Future<MemorySegment> f : results) {
                assertSameBytes(s.data(), f.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS), "concurrent read");
            }
        } finally {
            pool.shutdownNow();
            clients.forEach(TransportClient::close);
        }
        assertEquals(1, s.leasesTaken(), "only the store leased the staging buffer");
        assertEquals(0, s.openLeases());
    }

    /**
     * Overridden: the base test kills the producer from its lease hook, which for the file transport fires during the
     * store, not during the read, and cannot be awaited. Here the files are deleted from another thread while the read
     * runs: the read either completes with exact bytes (it mapped the file first; the mapping outlives the deletion) or
     * fails, retriably while the file changes under the read or as NOT_FOUND once it is gone; after the deletion the
     * next read is NOT_FOUND, quickly.
     */
    @Override
    @Test
    protected void producerGoneMidTransferFailsRetriably() {
        TestStagedCheckpoint s = staged(1, 18, 64L * 1024 * 1024);
        Location loc = serve(s);
        MemorySegment dst = buffer(s.manifest().totalBytes());
        assertTimeoutPreemptively(TIMEOUT, () -> {
            Thread killer = Thread.ofPlatform().daemon().start(this::killProducer);
            try {
                client.read(s.manifest(), loc, whole(s.manifest()), dst);
                assertSameBytes(s.data(), dst, "transfer that finished before the file was deleted");
            } catch (RetriableViperException | ViperNotFoundException expected) {
                assertNotNull(expected.getMessage());
            }
            killer.join();
        });
        MemorySegment dst2 = buffer(s.manifest().totalBytes());
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> assertThrows(
                        ViperNotFoundException.class, () -> client.read(s.manifest(), loc, whole(s.manifest()), dst2)));
    }
}
