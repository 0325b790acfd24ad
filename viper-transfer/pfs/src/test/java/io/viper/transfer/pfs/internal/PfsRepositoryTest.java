package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.manifest.Tier;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The repository's layout and rules: what a store writes, LATEST only forward, retention, repeated and refused stores,
 * directories that are not versions.
 */
class PfsRepositoryTest extends PfsRepositoryTestBase {
    @Test
    void storeWritesTheLayoutAndReadsBack() throws IOException {
        PfsRepository repo = repo(3);
        TestStagedCheckpoint s = staged(1);
        Location loc = store(repo, s);

        Path dir = modelDir().resolve("1");
        assertEquals(new Location(dir.resolve("model.safetensors").toUri(), Tier.PFS), loc);
        assertTrue(loc.uri().toString().startsWith("file:///"), loc.uri().toString());
        assertTrue(Files.isRegularFile(dir.resolve(PfsRepository.DATA_FILE)));
        assertTrue(Files.isRegularFile(dir.resolve(PfsRepository.MANIFEST_FILE)));
        assertEquals("1\n", latestFile());
        assertEquals(List.of(), hiddenEntries(), "no temporary entries left");

        Manifest onDisk = ManifestCodec.decode(Files.readAllBytes(dir.resolve(PfsRepository.MANIFEST_FILE)), "test");
        assertEquals(List.of(loc), onDisk.locations(), "manifest.json names the file location");
        assertEquals(s.manifest().tensors(), onDisk.tensors());

        Manifest latest = repo.latest(MODEL).orElseThrow();
        assertEquals(1, latest.version());
        assertEquals(s.manifest().tensors(), latest.tensors());
        assertEquals(List.of(loc), latest.locations());
        assertEquals(latest, repo.find(MODEL, 1).orElseThrow());
        assertEquals(List.of(1L), repo.versions(MODEL));
        assertEquals(Optional.empty(), repo.find(MODEL, 2));
        assertEquals(Optional.empty(), repo.latest("other"));
        assertEquals(List.of(), repo.versions("other"));

        assertEquals(-1, s.data().mismatch(readBack(latest)), "bytes read back");
        long headerLength =
                Files.size(dir.resolve(PfsRepository.DATA_FILE)) - s.manifest().totalBytes() - 8;
        assertEquals(0, headerLength % 8, "header padded to a multiple of 8");
    }

    @Test
    void latestOnlyMovesForward() throws IOException {
        PfsRepository repo = repo(3);
        store(repo, staged(5));
        store(repo, staged(3));
        assertEquals("5\n", latestFile());
        assertEquals(5, repo.latest(MODEL).orElseThrow().version());
        assertEquals(List.of(3L, 5L), repo.versions(MODEL));
        store(repo, staged(6));
        assertEquals("6\n", latestFile());
        assertEquals(6, repo.latest(MODEL).orElseThrow().version());
    }

    @Test
    void retentionKeepsTheNewestVersions() throws IOException {
        PfsRepository repo = repo(3);
        for (long v = 1; v <= 6; v++) {
            store(repo, staged(v));
            assertEquals(v, repo.latest(MODEL).orElseThrow().version());
        }
        assertEquals(List.of(4L, 5L, 6L), repo.versions(MODEL));
        for (long v = 1; v <= 3; v++) {
            assertFalse(Files.exists(modelDir().resolve(Long.toString(v))), "version " + v + " deleted");
        }
        assertEquals(List.of(), hiddenEntries(), "no .del or .tmp leftovers");
        for (long v = 4; v <= 6; v++) {
            Manifest m = repo.find(MODEL, v).orElseThrow();
            assertEquals(-1, expectedBytes(v, m.totalBytes()).mismatch(readBack(m)), "version " + v + " intact");
        }
    }

    @Test
    void retentionNeverDeletesTheVersionLatestNames() throws IOException {
        PfsRepository repo = repo(2);
        store(repo, staged(1));
        store(repo, staged(2));
        // Versions 3 and 4 are complete but LATEST still names 2, as after a writer that crashed
        // between the rename and the LATEST update: move them in from another repository.
        Path other = Files.createDirectory(root.resolve("other-root"));
        try (PfsRepository elsewhere = new PfsRepository(other, 5)) {
            store(elsewhere, staged(3));
            store(elsewhere, staged(4));
        }
        Files.move(other.resolve(MODEL).resolve("3"), modelDir().resolve("3"));
        Files.move(other.resolve(MODEL).resolve("4"), modelDir().resolve("4"));
        assertEquals(List.of(1L, 2L, 3L, 4L), repo.versions(MODEL));
        assertEquals(2, repo.latest(MODEL).orElseThrow().version(), "readers follow LATEST");

        repo.applyRetention(MODEL, modelDir());
        assertEquals(List.of(2L, 3L, 4L), repo.versions(MODEL), "oldest deleted, LATEST's version kept");
        assertEquals("2\n", latestFile());
        Manifest moved = repo.find(MODEL, 4).orElseThrow();
        assertEquals(
                List.of(repo.locationOf(MODEL, 4)),
                moved.locations(),
                "location follows the directory, not the manifest's old path");
    }

    @Test
    void invalidVersionDirectoriesAreSkipped() throws IOException {
        PfsRepository repo = repo(10);
        store(repo, staged(1));
        store(repo, staged(2));
        Path v2 = modelDir().resolve("2");
        // 9: garbage manifest; 8: no manifest; 6: manifest of another version; 5: manifest but no data.
        Path v9 = Files.createDirectory(modelDir().resolve("9"));
        Files.writeString(v9.resolve(PfsRepository.MANIFEST_FILE), "{not json");
        Files.copy(v2.resolve(PfsRepository.DATA_FILE), v9.resolve(PfsRepository.DATA_FILE));
        Files.createDirectory(modelDir().resolve("8"));
        Files.copy(v2.resolve(PfsRepository.DATA_FILE), modelDir().resolve("8").resolve(PfsRepository.DATA_FILE));
        Path v6 = Files.createDirectory(modelDir().resolve("6"));
        Files.copy(v2.resolve(PfsRepository.MANIFEST_FILE), v6.resolve(PfsRepository.MANIFEST_FILE));
        Files.copy(v2.resolve(PfsRepository.DATA_FILE), v6.resolve(PfsRepository.DATA_FILE));
        Path other = Files.createDirectory(root.resolve("other-root"));
        try (PfsRepository elsewhere = new PfsRepository(other, 5)) {
            store(elsewhere, staged(5));
        }
        Files.move(other.resolve(MODEL).resolve("5"), modelDir().resolve("5"));
        Files.delete(modelDir().resolve("5").resolve(PfsRepository.DATA_FILE));
        Files.writeString(modelDir().resolve(PfsRepository.LATEST_FILE), "9\n");

        assertEquals(List.of(1L, 2L), repo.versions(MODEL));
        for (long v : new long[] {5, 6, 8, 9}) {
            assertEquals(Optional.empty(), repo.find(MODEL, v), "version " + v);
        }
        assertEquals(
                2, repo.latest(MODEL).orElseThrow().version(), "LATEST names an invalid version: newest valid one");

        Files.writeString(modelDir().resolve(PfsRepository.LATEST_FILE), "garbage");
        assertEquals(2, repo.latest(MODEL).orElseThrow().version(), "unreadable LATEST: newest valid one");
        Files.delete(modelDir().resolve(PfsRepository.LATEST_FILE));
        assertEquals(2, repo.latest(MODEL).orElseThrow().version(), "missing LATEST: newest valid one");

        ViperException e = assertThrows(ViperException.class, () -> store(repo, staged(9)));
        assertTrue(e.getMessage().contains(modelDir().resolve("9").toString()), e.getMessage());
    }

    @Test
    void storingTheSameVersionAgainIsIdempotentButDifferentContentIsRefused() throws IOException {
        PfsRepository repo = repo(3);
        TestStagedCheckpoint v1 = staged(1);
        Location first = store(repo, v1);
        long modified = Files.getLastModifiedTime(Path.of(first.uri())).toMillis();
        assertEquals(first, store(repo, staged(1)), "same content: same location, nothing rewritten");
        assertEquals(modified, Files.getLastModifiedTime(Path.of(first.uri())).toMillis());

        TestStagedCheckpoint different = staged(MODEL, 1, 5, 5);
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> store(repo, different));
        assertTrue(e.getMessage().contains("nt3 v1") && e.getMessage().contains("different"), e.getMessage());
        assertEquals(-1, v1.data().mismatch(readBack(repo.find(MODEL, 1).orElseThrow())));
    }

    @Test
    void aVersionOlderThanTheRetainedWindowIsRefused() {
        PfsRepository repo = repo(2);
        store(repo, staged(5));
        store(repo, staged(6));
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> store(repo, staged(4)));
        assertTrue(e.getMessage().contains("viper.pfs.retention"), e.getMessage());
        assertEquals(List.of(5L, 6L), repo.versions(MODEL));
    }

    @Test
    void badArgumentsAreConfigErrors() {
        PfsRepository repo = repo(3);
        assertThrows(ViperConfigException.class, () -> repo.latest("../etc"));
        assertThrows(ViperConfigException.class, () -> repo.versions(""));
        assertThrows(ViperConfigException.class, () -> repo.find(".hidden", 1));
        assertThrows(ViperConfigException.class, () -> repo.find(MODEL, 0));
        TestStagedCheckpoint a = staged(1);
        TestStagedCheckpoint b = staged(2);
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> repo.store(a.manifest(), b));
        assertTrue(e.getMessage().contains("v1") && e.getMessage().contains("v2"), e.getMessage());
        assertThrows(ViperConfigException.class, () -> new PfsRepository(root, 0));

        repo.close();
        repo.close();
        ViperException closed = assertThrows(ViperException.class, () -> repo.latest(MODEL));
        assertEquals(ViperException.Reason.CLOSED, closed.reason());
    }
}
