package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperException;
import io.viper.manifest.Manifest;
import io.viper.spi.ReadLease;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Symbolic links planted in a PFS repository (issue 39, case 6): a linked model directory is refused with one line
 * naming it, and {@code LATEST} planted as a link is replaced, not written through; what the links point to stays as it
 * was.
 */
class PfsRepositoryLinksTest extends PfsRepositoryTestBase {
    @TempDir
    Path elsewhere;

    private List<String> entries(Path d) throws IOException {
        try (Stream<Path> s = Files.list(d)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void aLinkedModelDirectoryIsRefusedAndNothingIsWrittenThroughIt() throws IOException {
        Files.createSymbolicLink(modelDir(), elsewhere);
        PfsRepository repo = repo(3);
        ViperException e = assertThrows(ViperException.class, () -> store(repo, staged(1)));
        assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
        assertTrue(e.getMessage().contains(modelDir().toString()), e.getMessage());
        assertEquals(List.of(), entries(elsewhere), "nothing written where the link points");
        assertEquals(0, repo.recover(MODEL), "recover neither follows it");
        assertEquals(List.of(), entries(elsewhere));
    }

    @Test
    void aLatestPlantedAsALinkIsReplacedNotWrittenThrough() throws IOException {
        Path victim = Files.writeString(elsewhere.resolve("victim"), "precious", StandardCharsets.US_ASCII);
        Files.createDirectories(modelDir());
        Files.createSymbolicLink(modelDir().resolve(PfsRepository.LATEST_FILE), victim);
        PfsRepository repo = repo(3);
        store(repo, staged(1));
        assertEquals("precious", Files.readString(victim, StandardCharsets.US_ASCII));
        Path latest = modelDir().resolve(PfsRepository.LATEST_FILE);
        assertTrue(Files.isRegularFile(latest, LinkOption.NOFOLLOW_LINKS));
        assertEquals("1\n", latestFile());
    }

    @Test
    void aLinkedBlockStoreIsRefused() throws IOException {
        Files.createSymbolicLink(root.resolve(BlockStore.DIR), elsewhere);
        PfsRepository repo = repo(3);
        TestStagedCheckpoint s = staged(MODEL, 1, 8 * 4096);
        Manifest m = s.manifestWithBlocks(4096);
        ViperException e;
        try (ReadLease lease = s.tryLease()) {
            e = assertThrows(ViperException.class, () -> repo.store(m, s));
        }
        assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
        assertEquals(List.of(), entries(elsewhere), "no block written where the link points");
    }
}
