package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.ByteRange;
import io.viper.spi.ReadLease;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the PFS repository's tests share: a repository under a temporary root, versions whose bytes derive from their
 * number, and readers of what a store left on disk.
 */
@Timeout(60)
abstract class PfsRepositoryTestBase {
    static final String MODEL = "nt3";

    @TempDir
    Path root;

    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    PfsRepository repo(int retention) {
        return repo(retention, WriteHooks.NONE);
    }

    PfsRepository repo(int retention, WriteHooks hooks) {
        PfsRepository r = new PfsRepository(root, retention, 4096, hooks);
        closeables.add(r);
        return r;
    }

    /** Version {@code v} of the test model: its bytes derive from the version, so a reader can check them. */
    TestStagedCheckpoint staged(long version) {
        return staged(MODEL, version, 10_000, 3, 0, 7_777);
    }

    TestStagedCheckpoint staged(String model, long version, long... sizes) {
        TestStagedCheckpoint s = new TestStagedCheckpoint(model, version, seedOf(version), sizes);
        closeables.add(s);
        return s;
    }

    static long seedOf(long version) {
        return 1000 + version;
    }

    static Location store(PfsRepository repo, TestStagedCheckpoint s) {
        try (ReadLease lease = s.tryLease()) {
            assertNotNull(lease);
            return repo.store(s.manifest(), s);
        }
    }

    Path modelDir() {
        return root.resolve(MODEL);
    }

    String latestFile() throws IOException {
        return Files.readString(modelDir().resolve(PfsRepository.LATEST_FILE), StandardCharsets.US_ASCII);
    }

    List<String> hiddenEntries() throws IOException {
        try (Stream<Path> s = Files.list(modelDir())) {
            return s.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("."))
                    .sorted()
                    .toList();
        }
    }

    /** The data section of a stored version, read through the file transport. */
    static MemorySegment readBack(Manifest m) {
        MemorySegment dst = Arena.ofAuto().allocate(Math.max(1, m.totalBytes())).asSlice(0, m.totalBytes());
        try (FileTransportClient c = new FileTransportClient()) {
            c.read(m, m.locations().getFirst(), List.of(new ByteRange(0, m.totalBytes(), 0)), dst);
        }
        return dst;
    }

    static MemorySegment expectedBytes(long version, long size) {
        MemorySegment seg = Arena.ofAuto().allocate(Math.max(1, size)).asSlice(0, size);
        TestStagedCheckpoint.fill(seg, seedOf(version));
        return seg;
    }
}
