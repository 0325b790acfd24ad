package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperFormatException;
import io.viper.format.SafetensorsFile;
import io.viper.format.SafetensorsHeader;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import io.viper.tensor.TensorInfo;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The safetensors files of the PFS repository, written with viper-core's header encoder and read with its parser: the
 * layout, the manifest check, and repositories written before the PFS used core's codec.
 */
class PfsSafetensorsLayoutTest {
    /**
     * A repository written by the PFS's own header writer, before it used core's (see
     * {@link #legacyRepositoryStillReads}).
     */
    private static final String LEGACY = "legacy-repository/legacy/";

    @TempDir
    Path root;

    /** A manifest of nt3 v{@code version} with {@code tensors} (contiguous from 0). */
    private static Manifest manifest(long version, Map<String, String> metadata, TensorInfo... tensors) {
        List<TensorEntry> entries = new ArrayList<>();
        for (TensorInfo t : tensors) {
            entries.add(new TensorEntry(t, new ContentHash(version, entries.size())));
        }
        return new Manifest("nt3", version, "test", 0, new LinkedHashMap<>(metadata), entries, List.of());
    }

    private static TensorInfo[] sampleTensors() {
        return new TensorInfo[] {
            TensorInfo.of("dense.weight", DType.F32, new long[] {2, 3}, 0),
            TensorInfo.of("dense.bias", DType.BF16, new long[] {3}, 24),
            TensorInfo.of("empty", DType.I64, new long[] {0, 4}, 30),
            TensorInfo.of("step", DType.I64, new long[] {}, 30)
        };
    }

    /** Stores {@code manifest} with data filled from {@code seed}; returns the file. */
    private Path store(Manifest manifest, long seed) {
        try (PfsRepository repo = new PfsRepository(root, 3);
                TestStagedCheckpoint staged = new TestStagedCheckpoint(manifest, seed)) {
            return Path.of(repo.store(manifest, staged).uri());
        }
    }

    private static String jsonHeader(byte[] file) {
        long n = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN).getLong();
        return new String(file, 8, (int) n, StandardCharsets.UTF_8);
    }

    @Test
    void storedFilesParseBackToTheManifest() throws IOException {
        Manifest m = manifest(7, Map.of("viper.iteration", "700", "quote\"key", "line\nbreak"), sampleTensors());
        Path file = store(m, 5);
        try (SafetensorsFile f = SafetensorsFile.open(file)) {
            assertEquals(
                    m.tensors().stream().map(TensorEntry::info).toList(),
                    f.tensors().stream().map(Tensor::info).toList());
            assertEquals(m.metadata(), f.metadata());
            assertEquals(0, f.header().dataStart() % 8, "data section 8-aligned");
            assertEquals(m.totalBytes(), f.dataBytes());
        }
        String json = jsonHeader(Files.readAllBytes(file));
        assertTrue(json.startsWith("{\"__metadata__\":{"), json);
        assertTrue(
                json.indexOf("dense.weight") < json.indexOf("dense.bias")
                        && json.indexOf("dense.bias") < json.indexOf("\"step\""),
                "tensors in data order: " + json);
        assertTrue(json.contains("\"data_offsets\":[0,24]"), json);
    }

    @Test
    void anEmptyManifestGivesAValidFile() {
        try (SafetensorsFile f = SafetensorsFile.open(store(manifest(1, Map.of()), 1))) {
            assertEquals(List.of(), f.tensors());
            assertEquals(0, f.dataBytes());
        }
    }

    @Test
    void aTensorCalledMetadataCannotBeStored() {
        Manifest m = manifest(1, Map.of(), TensorInfo.of(SafetensorsHeader.METADATA_KEY, DType.U8, new long[] {1}, 0));
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> store(m, 1));
        assertTrue(e.getMessage().contains("nt3 v1") && e.getMessage().contains("__metadata__"), e.getMessage());
    }

    @Test
    void headerPaddingIsSpaces() throws IOException {
        for (int nameLength = 1; nameLength <= 9; nameLength++) {
            Path file = store(
                    manifest(nameLength, Map.of(), TensorInfo.of("x".repeat(nameLength), DType.U8, new long[] {1}, 0)),
                    1);
            String json = jsonHeader(Files.readAllBytes(file));
            assertEquals(0, (8 + json.length()) % 8);
            String trimmed = json.stripTrailing();
            assertTrue(trimmed.endsWith("}"));
            assertEquals(" ".repeat(json.length() - trimmed.length()), json.substring(trimmed.length()));
            assertTrue(json.length() - trimmed.length() < 8);
        }
    }

    @Test
    void aHeaderThatDoesNotMatchTheManifestIsRefused() {
        String source = "/pfs/nt3/7/model.safetensors";
        SafetensorsHeader header = new SafetensorsHeader(64, 38, new LinkedHashMap<>(), List.of(sampleTensors()));
        ManifestMatch.check(header, manifest(7, Map.of(), sampleTensors()), source);
        Manifest otherShape = manifest(
                7,
                Map.of(),
                TensorInfo.of("dense.weight", DType.F32, new long[] {3, 2}, 0),
                TensorInfo.of("dense.bias", DType.BF16, new long[] {3}, 24),
                TensorInfo.of("empty", DType.I64, new long[] {0, 4}, 30),
                TensorInfo.of("step", DType.I64, new long[] {}, 30));
        ViperFormatException e =
                assertThrows(ViperFormatException.class, () -> ManifestMatch.check(header, otherShape, source));
        assertEquals(
                source
                        + ": does not match the manifest of nt3 v7: tensor 'dense.weight' is F32[2, 3] at bytes [0,"
                        + " 24) in the file"
                        + " but F32[3, 2] at bytes [0, 24) in the manifest",
                e.getMessage());
        Manifest fewer = manifest(7, Map.of(), TensorInfo.of("dense.weight", DType.F32, new long[] {2, 3}, 0));
        assertTrue(assertThrows(ViperFormatException.class, () -> ManifestMatch.check(header, fewer, source))
                .getMessage()
                .contains("the file holds 4 tensors, the manifest 1"));
        Manifest renamed = manifest(7, Map.of(), TensorInfo.of("w", DType.F32, new long[] {2, 3}, 0));
        assertTrue(assertThrows(ViperFormatException.class, () -> ManifestMatch.check(header, renamed, source))
                .getMessage()
                .contains("tensor 'w' is missing from the file"));
    }

    @Test
    void tensorsMayAppearInAnyOrderInTheJson() throws IOException {
        Manifest m = manifest(
                1,
                Map.of(),
                TensorInfo.of("a", DType.U8, new long[] {3}, 0),
                TensorInfo.of("b", DType.U8, new long[] {2}, 3));
        byte[] json = ("{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[3,5]},"
                        + "\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]},"
                        + "\"__metadata__\":{\"k\":\"v\"}}")
                .getBytes(StandardCharsets.UTF_8);
        byte[] file = ByteBuffer.allocate(8 + json.length + 5)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putLong(json.length)
                .put(json)
                .put(new byte[] {1, 2, 3, 4, 5})
                .array();
        Path path = Files.createDirectories(root.resolve("nt3/1")).resolve(PfsRepository.DATA_FILE);
        Files.write(path, file);
        try (FileTransportClient client = new FileTransportClient();
                Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(5);
            client.read(m, new Location(path.toUri(), Tier.PFS), List.of(new ByteRange(0, 5, 0)), dst);
            assertArrayEquals(new byte[] {1, 2, 3, 4, 5}, dst.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    /**
     * Files written by the PFS's former header writer (it always wrote {@code __metadata__}, even empty) still read,
     * and with metadata the files written now are byte for byte the same.
     */
    @Test
    void legacyRepositoryStillReads() throws IOException {
        for (String name :
                List.of("LATEST", "1/manifest.json", "1/model.safetensors", "2/manifest.json", "2/model.safetensors")) {
            Path to = root.resolve("legacy").resolve(name);
            Files.createDirectories(to.getParent());
            try (InputStream in = getClass().getResourceAsStream(LEGACY + name)) {
                Files.copy(in, to);
            }
        }
        try (PfsRepository repo = new PfsRepository(root, 5);
                FileTransportClient client = new FileTransportClient()) {
            assertEquals(List.of(1L, 2L), repo.versions("legacy"));
            assertEquals(2, repo.latest("legacy").orElseThrow().version());
            for (long version : List.of(1L, 2L)) {
                Manifest m = repo.find("legacy", version).orElseThrow();
                // the fixture's data was filled with seed = version
                try (TestStagedCheckpoint expected = new TestStagedCheckpoint(m, version);
                        TransportClient.MappedData mapped =
                                client.map(m, m.locations().getFirst()).orElseThrow()) {
                    assertEquals(-1, expected.data().mismatch(mapped.data()), "legacy v" + version + " data");
                }
            }
            Manifest v2 = repo.find("legacy", 2).orElseThrow();
            Path rewritten = store(new Manifest("nt3", 2, "test", 0, v2.metadata(), v2.tensors(), List.of()), 2);
            assertArrayEquals(
                    Files.readAllBytes(root.resolve("legacy/2/model.safetensors")),
                    Files.readAllBytes(rewritten),
                    "a version with metadata is written byte for byte as before");
        }
    }
}
