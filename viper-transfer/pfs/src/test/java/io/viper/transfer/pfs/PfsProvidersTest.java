package io.viper.transfer.pfs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.manifest.Tier;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.ReadLease;
import io.viper.spi.RepositoryProvider;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PfsProvidersTest {
    @TempDir
    Path root;

    @Test
    void providersAreFoundByScheme() {
        Optional<TransportProvider> transport = ServiceLoader.load(TransportProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(p -> p.scheme().equals("file"))
                .findFirst();
        assertTrue(transport.orElseThrow() instanceof FileTransportProvider);
        Optional<RepositoryProvider> repository = ServiceLoader.load(RepositoryProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(p -> p.scheme().equals("file"))
                .findFirst();
        assertTrue(repository.orElseThrow() instanceof PfsRepositoryProvider);
    }

    @Test
    void fileTransportDescribesItself() {
        FileTransportProvider p = new FileTransportProvider();
        assertEquals("file", p.scheme());
        assertEquals(Tier.PFS, p.tier());
        assertEquals(100, p.priority());
        assertEquals(Optional.empty(), p.unavailableReason());
        TransportClient c = p.openClient(ViperConfig.defaults());
        assertNotNull(c);
        c.close();
        ViperConfigException e = assertThrows(
                ViperConfigException.class, () -> p.openServer(URI.create("file:///pfs"), ViperConfig.defaults()));
        assertTrue(e.getMessage().contains("file:///pfs") && e.getMessage().contains("PFS repository"), e.getMessage());
    }

    @Test
    void openCreatesTheRootAndAppliesRetention() {
        Path dir = root.resolve("a/b");
        PfsRepositoryProvider p = new PfsRepositoryProvider();
        try (CheckpointRepository repo = p.open(dir.toUri(), ViperConfig.defaults())) {
            assertTrue(Files.isDirectory(dir));
            for (long v = 1; v <= 5; v++) {
                store(repo, v);
            }
            assertEquals(List.of(3L, 4L, 5L), repo.versions("m"), "default retention 3");
        }
        try (CheckpointRepository repo = p.open(dir.toUri(), ViperConfig.of(Map.of("viper.pfs.retention", " 1 ")))) {
            store(repo, 6);
            assertEquals(List.of(6L), repo.versions("m"));
            assertEquals(6, repo.latest("m").orElseThrow().version());
        }
    }

    private static void store(CheckpointRepository repo, long version) {
        try (TestStagedCheckpoint s = new TestStagedCheckpoint("m", version, version, 100);
                ReadLease lease = s.tryLease()) {
            assertNotNull(lease);
            repo.store(s.manifest(), s);
        }
    }

    @Test
    void badRootsAndSettingsAreConfigErrors() throws IOException {
        PfsRepositoryProvider p = new PfsRepositoryProvider();
        assertThrows(ViperConfigException.class, () -> p.open(URI.create("tcp://host:1/x"), ViperConfig.defaults()));
        assertThrows(ViperConfigException.class, () -> p.open(URI.create("file:relative/dir"), ViperConfig.defaults()));
        assertThrows(ViperConfigException.class, () -> p.open(URI.create("file://host/abs"), ViperConfig.defaults()));
        Path regular = Files.writeString(root.resolve("file"), "x");
        assertTrue(assertThrows(ViperConfigException.class, () -> p.open(regular.toUri(), ViperConfig.defaults()))
                .getMessage()
                .contains("not a directory"));
        for (String bad : List.of("0", "-2", "three", "")) {
            ViperConfigException e =
                    assertThrows(ViperConfigException.class, () -> ViperConfig.of(Map.of("viper.pfs.retention", bad)));
            assertTrue(e.getMessage().contains("viper.pfs.retention"), e.getMessage());
        }
    }
}
