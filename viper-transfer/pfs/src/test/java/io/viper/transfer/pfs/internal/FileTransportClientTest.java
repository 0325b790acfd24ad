package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.ReadLease;
import io.viper.spi.TransportClient;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileTransportClientTest {
    @TempDir
    Path root;

    private PfsRepository repo;
    private FileTransportClient client;
    private TestStagedCheckpoint staged;
    private Manifest manifest;
    private Location location;
    private Path file;
    private final Arena arena = Arena.ofShared();

    @BeforeEach
    void storeOneVersion() {
        repo = new PfsRepository(root, 3);
        client = new FileTransportClient();
        staged = new TestStagedCheckpoint("nt3", 1, 42, 1000, 24, 0, 5000);
        try (ReadLease lease = staged.tryLease()) {
            assertNotNull(lease);
            location = repo.store(staged.manifest(), staged);
        }
        manifest = repo.latest("nt3").orElseThrow();
        file = Path.of(location.uri());
    }

    @AfterEach
    void close() {
        client.close();
        repo.close();
        staged.close();
        arena.close();
    }

    private MemorySegment buffer(long size) {
        return arena.allocate(Math.max(1, size)).asSlice(0, size);
    }

    private void readWhole(Manifest m, MemorySegment dst) {
        client.read(m, location, List.of(new ByteRange(0, m.totalBytes(), 0)), dst);
    }

    @Test
    void mapServesTheDataSectionInPlaceAndSurvivesDeletion() throws IOException {
        TransportClient.MappedData mapped = client.map(manifest, location).orElseThrow();
        try {
            assertEquals(manifest.totalBytes(), mapped.data().byteSize());
            assertTrue(mapped.data().isReadOnly());
            assertTrue(mapped.data().isMapped(), "a mapping, not a copy");
            assertEquals(-1, staged.data().mismatch(mapped.data()));
            Files.delete(file);
            assertEquals(-1, staged.data().mismatch(mapped.data()), "the mapping outlives the file's deletion");
        } finally {
            mapped.close();
            mapped.close();
        }
        assertThrows(IllegalStateException.class, () -> mapped.data().get(ValueLayout.JAVA_BYTE, 0), "closed mapping");
    }

    @Test
    void readsRangesIntoTheDestination() {
        var t3 = manifest.tensors().get(3).info();
        MemorySegment dst = buffer(10 + t3.length());
        client.read(
                manifest, location, List.of(new ByteRange(t3.offset(), t3.length(), 10), new ByteRange(0, 0, 0)), dst);
        assertEquals(-1, staged.data().asSlice(t3.offset(), t3.length()).mismatch(dst.asSlice(10)));
    }

    @Test
    void aMissingFileIsNotFound() throws IOException {
        Files.delete(file);
        ViperNotFoundException e =
                assertThrows(ViperNotFoundException.class, () -> readWhole(manifest, buffer(manifest.totalBytes())));
        assertFalse(e.isRetriable());
        assertTrue(e.getMessage().startsWith(file.toString()) && e.getMessage().contains("retention"), e.getMessage());
        assertThrows(ViperNotFoundException.class, () -> client.map(manifest, location));
    }

    @Test
    void aTruncatedFileIsAFormatErrorNamingIt() throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(ch.size() - 100);
        }
        ViperFormatException e =
                assertThrows(ViperFormatException.class, () -> readWhole(manifest, buffer(manifest.totalBytes())));
        assertEquals(file.toString(), e.source());
        assertTrue(e.getMessage().contains("truncated"), e.getMessage());
        assertThrows(ViperFormatException.class, () -> client.map(manifest, location));

        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(3);
        }
        assertTrue(assertThrows(ViperFormatException.class, () -> readWhole(manifest, buffer(manifest.totalBytes())))
                .getMessage()
                .contains("too short"));
    }

    @Test
    void aCorruptHeaderIsAFormatError() throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, Long.MAX_VALUE), 0);
        }
        ViperFormatException e =
                assertThrows(ViperFormatException.class, () -> readWhole(manifest, buffer(manifest.totalBytes())));
        assertEquals(file.toString(), e.source());
    }

    @Test
    void aFileThatDoesNotMatchTheManifestIsAFormatError() {
        try (TestStagedCheckpoint other = new TestStagedCheckpoint("nt3", 1, 42, 1000, 24, 5000)) {
            Manifest wrong = other.manifest();
            ViperFormatException e = assertThrows(
                    ViperFormatException.class,
                    () -> client.read(wrong, location, List.of(new ByteRange(0, 10, 0)), buffer(10)));
            assertTrue(e.getMessage().contains("does not match the manifest"), e.getMessage());
            assertThrows(ViperFormatException.class, () -> client.map(wrong, location));
        }
    }

    @Test
    void badArgumentsAreConfigErrors() {
        MemorySegment small = buffer(10);
        assertThrows(ViperConfigException.class, () -> readWhole(manifest, small), "destination too small");
        assertThrows(
                ViperConfigException.class,
                () -> client.read(
                        manifest, location, List.of(new ByteRange(manifest.totalBytes() - 5, 10, 0)), buffer(10)),
                "range past the data");
        assertThrows(
                ViperConfigException.class,
                () -> client.read(
                        manifest,
                        location,
                        List.of(new ByteRange(0, 1, 0)),
                        buffer(1).asReadOnly()),
                "read-only destination");
        Location tcp = new Location(URI.create("tcp://127.0.0.1:1"), Tier.HOST);
        assertThrows(ViperConfigException.class, () -> client.read(manifest, tcp, List.of(), buffer(1)));
        Location relative = new Location(URI.create("file:relative/model.safetensors"), Tier.PFS);
        assertThrows(ViperConfigException.class, () -> client.map(manifest, relative));

        client.close();
        assertEquals(
                ViperException.Reason.CLOSED,
                assertThrows(ViperException.class, () -> client.map(manifest, location))
                        .reason());
    }
}
