package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperException;
import io.viper.format.SafetensorsHeader;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.manifest.TensorEntry;
import io.viper.spi.ByteRange;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.ReadLease;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The PFS runs out of space at each step of a store: while the data file is written, while the manifest is, and while
 * {@code LATEST} is replaced. Each time the store fails with one line naming the full disk, readers keep the version
 * before, byte-identical, nothing partial stays behind, and once space is back the next producer's
 * {@link CheckpointRepository#recover} and store carry on with a newer version, byte-identical. The disk is a small
 * tmpfs filled to the byte where this test may mount one (root), else the repository's write hooks fail the same steps.
 * Only the repository's public behaviour is checked, so that a rework of the PFS keeps this as its safety net.
 */
class PfsFullIT {
    private static final String MODEL = "full";
    private static final int PAGE = 4096;

    /** Where the store runs out of space. */
    enum Step {
        DATA_FILE,
        MANIFEST,
        LATEST
    }

    @TempDir
    Path tmp;

    private Path root;
    private boolean tmpfs;

    @BeforeEach
    void mountSmallDisk() throws Exception {
        root = Files.createDirectory(tmp.resolve("pfs"));
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", root.toString())
                .redirectErrorStream(true)
                .start();
        tmpfs = p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
    }

    @AfterEach
    void unmount() throws Exception {
        if (tmpfs) {
            new ProcessBuilder("umount", root.toString()).inheritIO().start().waitFor(30, TimeUnit.SECONDS);
        }
    }

    private static void store(CheckpointRepository repo, TestStagedCheckpoint s) {
        try (ReadLease lease = s.tryLease()) {
            assertNotNull(lease);
            repo.store(s.manifest(), s);
        }
    }

    private static void assertServes(CheckpointRepository repo, TestStagedCheckpoint expected) {
        Manifest m = repo.latest(MODEL).orElseThrow();
        assertEquals(expected.version(), m.version());
        try (Arena arena = Arena.ofConfined();
                FileTransportClient c = new FileTransportClient()) {
            MemorySegment dst = arena.allocate(m.totalBytes());
            c.read(m, m.locations().getFirst(), List.of(new ByteRange(0, m.totalBytes(), 0)), dst);
            assertEquals(-1, expected.data().mismatch(dst), "byte-identical v" + m.version());
        }
    }

    private List<String> leftovers() throws IOException {
        try (Stream<Path> s = Files.list(root.resolve(MODEL))) {
            return s.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("."))
                    .toList();
        }
    }

    @ParameterizedTest
    @EnumSource(Step.class)
    void aFullDiskAtEachStepLeavesTheVersionBeforeAndRecovers(Step step) throws Exception {
        try (TestStagedCheckpoint v1 = new TestStagedCheckpoint(MODEL, 1, 1, 300_000);
                TestStagedCheckpoint v2 = new TestStagedCheckpoint(MODEL, 2, 2, 1_000_000, 700_000)) {
            boolean[] full = {true};
            PfsRepository repo = tmpfs
                    ? new PfsRepository(root, 3)
                    : new PfsRepository(root, 3, PfsRepository.DEFAULT_CHUNK_BYTES, hooks(step, full));
            store(repo, v1);
            Path filler = tmpfs ? fill(repo, v2.manifest(), step) : null;

            ViperException e = assertThrows(ViperException.class, () -> store(repo, v2));
            assertEquals(ViperException.Reason.IO, e.reason());
            assertTrue(
                    e.getMessage().contains("No space left on device")
                            && !e.getMessage().contains("\n"),
                    e.getMessage());
            assertServes(repo, v1);
            assertEquals(
                    step == Step.LATEST ? List.of(1L, 2L) : List.of(1L),
                    repo.versions(MODEL),
                    "only a complete version is listed: v2 is complete when LATEST failed");
            assertEquals(List.of(), leftovers(), "nothing partial left behind");

            // Space is back; a producer starts again.
            full[0] = false;
            if (filler != null) {
                Files.delete(filler);
            }
            try (PfsRepository next = new PfsRepository(root, 3);
                    TestStagedCheckpoint v3 =
                            new TestStagedCheckpoint(MODEL, (step == Step.LATEST ? 2 : 1) + 1, 3, 500_000)) {
                assertEquals(
                        v3.version() - 1,
                        next.recover(MODEL),
                        "the producer numbers after the newest complete version");
                if (step == Step.LATEST) {
                    assertEquals(
                            "2\n",
                            Files.readString(root.resolve(MODEL).resolve("LATEST"), StandardCharsets.US_ASCII),
                            "LATEST repaired");
                }
                store(next, v3);
                assertServes(next, v3);
                assertEquals(List.of(), leftovers());
            }
        }
    }

    /** Fills the tmpfs so that storing {@code m} runs out of space exactly at {@code step}; returns the filler. */
    private Path fill(PfsRepository repo, Manifest m, Step step) throws IOException {
        long data = SafetensorsHeader.encode(
                                m.tensors().stream().map(TensorEntry::info).toList(), m.metadata())
                        .length
                + m.totalBytes();
        long manifest = ManifestCodec.encode(m.replaceLocations(List.of(repo.locationOf(MODEL, m.version())))).length;
        long dataPages = (data + PAGE - 1) / PAGE;
        long manifestPages = (manifest + PAGE - 1) / PAGE;
        long leave = switch (step) {
            case DATA_FILE -> dataPages - 1;
            case MANIFEST -> dataPages;
            case LATEST -> dataPages + manifestPages;
        };
        FileStore store = Files.getFileStore(root);
        long fillBytes = store.getUsableSpace() - leave * PAGE;
        Path filler = root.resolve("filler");
        try (OutputStream out = Files.newOutputStream(filler)) {
            byte[] block = new byte[PAGE];
            for (long done = 0; done < fillBytes; done += PAGE) {
                out.write(block);
            }
        }
        assertEquals(
                leave * PAGE, store.getUsableSpace(), "the disk has exactly the room for the steps before " + step);
        return filler;
    }

    /** Without a tmpfs: hooks that fail the same step with the full disk's error while {@code full[0]}. */
    private static WriteHooks hooks(Step step, boolean[] full) {
        return new WriteHooks() {
            @Override
            public void beforeChunk(Path file, long position) throws IOException {
                if (full[0]
                        && step == Step.DATA_FILE
                        && file.getParent().getFileName().toString().startsWith(".tmp-2-")) {
                    throw new FileSystemException(file.toString(), null, "No space left on device");
                }
            }

            @Override
            public void beforeCommit(Path temporaryDirectory) throws IOException {
                if (full[0]
                        && step == Step.MANIFEST
                        && temporaryDirectory.getFileName().toString().startsWith(".tmp-2-")) {
                    throw new FileSystemException(temporaryDirectory.toString(), null, "No space left on device");
                }
            }

            @Override
            public void beforeLatest(Path modelDirectory) throws IOException {
                if (full[0] && step == Step.LATEST && Files.isDirectory(modelDirectory.resolve("2"))) {
                    throw new FileSystemException(
                            modelDirectory.resolve("LATEST").toString(), null, "No space left on device");
                }
            }
        };
    }
}
