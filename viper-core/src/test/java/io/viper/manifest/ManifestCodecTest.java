package io.viper.manifest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperFormatException;
import io.viper.hash.ContentHash;
import io.viper.hash.HashAlgorithm;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ManifestCodecTest {
    static Manifest sample() {
        var meta = new LinkedHashMap<String, String>();
        meta.put("viper.iteration", "700");
        meta.put("note", "ünïcode ✓");
        return new Manifest(
                "nt3",
                7,
                "host:42",
                1_763_795_000_000_123L,
                meta,
                List.of(
                        new TensorEntry(
                                new TensorInfo("a", DType.F32, new long[] {2, 3}, 0, 24), new ContentHash(1, 2)),
                        new TensorEntry(
                                new TensorInfo("b", DType.BF16, new long[] {}, 24, 2),
                                new ContentHash(-1, 0x0123456789abcdefL))),
                List.of(
                        new Location(URI.create("ucx://127.0.0.1:4000"), Tier.HOST),
                        new Location(URI.create("file:///pfs/nt3/7/model.safetensors"), Tier.PFS)));
    }

    @Test
    void roundTrip() {
        Manifest m = sample();
        Manifest back = ManifestCodec.decode(ManifestCodec.encode(m), "test");
        assertEquals(m, back);
        assertEquals(26, back.totalBytes());
        String json = new String(ManifestCodec.encode(m), StandardCharsets.UTF_8);
        assertTrue(json.startsWith("{\"format\":1,"), json);
    }

    /**
     * The bytes other readers (older consumers, the Kafka topic, the PFS repository) see: field order, escaping and
     * number forms stay exactly these, whichever way the encoder is written.
     */
    @Test
    void theEncodingIsByteForByteTheDocumentedLayout() {
        var meta = new LinkedHashMap<String, String>();
        meta.put("viper.iteration", "700");
        meta.put("note", "ünïcode ✓ \"quoted\" back\\slash\nline");
        Manifest m = new Manifest(
                "nt3",
                7,
                "host:42",
                1_763_795_000_000_123L,
                meta,
                List.of(
                        new TensorEntry(
                                new TensorInfo("a", DType.F32, new long[] {2, 3}, 0, 24),
                                ContentHash.crc32c(0x0badf00d),
                                OptionalLong.of(-3L),
                                new BlockList(1 << 20, List.of(new ContentHash(1, 2)))),
                        new TensorEntry(
                                new TensorInfo("b", DType.BF16, new long[] {}, 24, 2),
                                ContentHash.crc32c(7),
                                OptionalLong.empty(),
                                new BlockList(1 << 20, List.of(new ContentHash(-1, 0x0123456789abcdefL))))),
                List.of(new Location(URI.create("ucx://127.0.0.1:4000"), Tier.HOST)));
        String expected = "{\"format\":3,\"model\":\"nt3\",\"version\":7,\"producer\":\"host:42\","
                + "\"published_at_ms\":1763795000000,\"published_at_us\":1763795000000123,"
                + "\"metadata\":{\"viper.iteration\":\"700\",\"note\":\"ünïcode ✓ \\\"quoted\\\""
                + " back\\\\slash\\nline\"},"
                + "\"tensors\":[{\"name\":\"a\",\"dtype\":\"F32\",\"shape\":[2,3],\"offset\":0,\"length\":24,"
                + "\"crc32c\":\"0badf00d\","
                + "\"phash64\":\"fffffffffffffffd\",\"blocks\":[\"00000000000000010000000000000002\"]},"
                + "{\"name\":\"b\",\"dtype\":\"BF16\",\"shape\":[],\"offset\":24,\"length\":2,\"crc32c\":\"00000007\","
                + "\"blocks\":[\"ffffffffffffffff0123456789abcdef\"]}],"
                + "\"block_bytes\":1048576,\"total_bytes\":26,\"locations\":[{\"uri\":\"ucx://127.0.0.1:4000\","
                + "\"tier\":\"HOST\"}]}";
        assertEquals(expected, new String(ManifestCodec.encode(m), StandardCharsets.UTF_8));
        assertEquals(m, ManifestCodec.decode(expected, "golden"));
    }

    @Test
    void thePublishTimeKeepsItsMicrosecondsAndItsMillisecondForOlderReaders() {
        String json = new String(ManifestCodec.encode(sample()), StandardCharsets.UTF_8);
        assertTrue(json.contains("\"published_at_ms\":1763795000000,\"published_at_us\":1763795000000123,"), json);
        assertEquals(1_763_795_000_000L, sample().publishedAtMs());
        // A manifest from before the microseconds (a PFS repository, a retained topic) reads as its millisecond.
        String legacy = json.replace(",\"published_at_us\":1763795000000123", "");
        assertEquals(
                1_763_795_000_000_000L, ManifestCodec.decode(legacy, "legacy").publishedAtMicros());
    }

    @Test
    void theTimeSincePublishKeepsItsFractionAndIsNeverNegative() {
        Manifest m = sample();
        Manifest earlier = new Manifest(
                m.model(),
                m.version(),
                m.producerId(),
                Manifest.nowMicros() - 2_500,
                m.metadata(),
                m.tensors(),
                m.locations());
        double ms = earlier.millisSincePublished();
        assertTrue(ms >= 2.5 && ms < 60_000, "2.5 ms ago read as " + ms + " ms");
        Manifest later = new Manifest(
                m.model(),
                m.version(),
                m.producerId(),
                Manifest.nowMicros() + 60_000_000,
                m.metadata(),
                m.tensors(),
                m.locations());
        assertEquals(0, later.millisSincePublished(), "a producer clock ahead of the consumer's");
    }

    @Test
    void crc32cManifestsAreFormat2AndRoundTrip() {
        Manifest m = sample();
        Manifest crc = new Manifest(
                m.model(),
                m.version(),
                m.producerId(),
                m.publishedAtMicros(),
                m.metadata(),
                List.of(
                        new TensorEntry(m.tensors().get(0).info(), ContentHash.crc32c(0xe3069283)),
                        new TensorEntry(m.tensors().get(1).info(), ContentHash.crc32c(7))),
                m.locations());
        String json = new String(ManifestCodec.encode(crc), StandardCharsets.UTF_8);
        assertTrue(json.startsWith("{\"format\":2,"), json);
        assertTrue(
                json.contains("\"crc32c\":\"e3069283\"")
                        && json.contains("\"crc32c\":\"00000007\"")
                        && !json.contains("xxh3_128"),
                json);
        Manifest back = ManifestCodec.decode(json, "test");
        assertEquals(crc, back);
        assertEquals(HashAlgorithm.CRC32C, back.tensors().get(0).hash().algorithm());
        // A format 2 reader still reads format 1 manifests, whose bytes did not change.
        assertTrue(new String(ManifestCodec.encode(m), StandardCharsets.UTF_8).startsWith("{\"format\":1,"));
        assertEquals(m, ManifestCodec.decode(ManifestCodec.encode(m), "test"));
    }

    @Test
    void blocksMakeFormat3AndRoundTrip() {
        Manifest m = sample();
        TensorInfo big = new TensorInfo("big", DType.U8, new long[] {10_000}, 26, 10_000);
        List<ContentHash> ids = List.of(new ContentHash(1, 1), new ContentHash(2, 2), new ContentHash(3, 3));
        Manifest blocks = new Manifest(
                m.model(),
                m.version(),
                m.producerId(),
                m.publishedAtMicros(),
                m.metadata(),
                List.of(
                        new TensorEntry(
                                m.tensors().get(0).info(),
                                ContentHash.crc32c(1),
                                OptionalLong.empty(),
                                new BlockList(4096, List.of(new ContentHash(9, 9)))),
                        new TensorEntry(
                                m.tensors().get(1).info(),
                                ContentHash.crc32c(2),
                                OptionalLong.empty(),
                                new BlockList(4096, List.of(new ContentHash(8, 8)))),
                        new TensorEntry(big, ContentHash.crc32c(3), OptionalLong.empty(), new BlockList(4096, ids))),
                m.locations());
        String json = new String(ManifestCodec.encode(blocks), StandardCharsets.UTF_8);
        assertTrue(json.startsWith("{\"format\":3,") && json.contains("\"block_bytes\":4096"), json);
        Manifest back = ManifestCodec.decode(json, "test");
        assertEquals(blocks, back);
        assertEquals(4096, back.blockBytes());
        assertEquals(ids, back.tensor("big").blocks().ids());
        // Manifests without blocks read as before: no blocks, block size 0.
        Manifest old = ManifestCodec.decode(ManifestCodec.encode(m), "test");
        assertEquals(0, old.blockBytes());
        assertTrue(old.tensors().stream().allMatch(t -> t.blocks().isEmpty()));
        // One block size per manifest.
        assertThrows(
                io.viper.errors.ViperConfigException.class,
                () -> new Manifest(
                        "m",
                        1,
                        "p",
                        0,
                        m.metadata(),
                        List.of(
                                new TensorEntry(
                                        m.tensors().get(0).info(),
                                        ContentHash.crc32c(1),
                                        OptionalLong.empty(),
                                        new BlockList(4096, List.of(new ContentHash(9, 9)))),
                                new TensorEntry(m.tensors().get(1).info(), ContentHash.crc32c(2))),
                        List.of()));
    }

    @Test
    void gpuHashIsOptionalAndRoundTrips() {
        Manifest m = sample();
        assertTrue(m.tensors().stream().allMatch(t -> t.phash64().isEmpty()));
        assertTrue(
                !new String(ManifestCodec.encode(m), StandardCharsets.UTF_8).contains("phash64"),
                "absent when not computed");
        Manifest withGpu = new Manifest(
                m.model(),
                m.version(),
                m.producerId(),
                m.publishedAtMicros(),
                m.metadata(),
                List.of(
                        new TensorEntry(
                                m.tensors().get(0).info(), m.tensors().get(0).hash(), OptionalLong.of(-3L)),
                        m.tensors().get(1)),
                List.of(new Location(URI.create("cuda-ipc://127.0.0.1:4001"), Tier.GPU)));
        String json = new String(ManifestCodec.encode(withGpu), StandardCharsets.UTF_8);
        assertTrue(json.contains("\"phash64\":\"fffffffffffffffd\""), json);
        Manifest back = ManifestCodec.decode(json, "test");
        assertEquals(withGpu, back);
        assertEquals(-3L, back.tensors().get(0).phash64().getAsLong());
        assertTrue(back.tensors().get(1).phash64().isEmpty());
        ViperFormatException e = assertThrows(
                ViperFormatException.class,
                () -> ManifestCodec.decode(json.replace("fffffffffffffffd", "nothex"), "bad"));
        assertTrue(e.getMessage().contains("tensor 'a': phash64 'nothex' is not 16 hex digits"), e.getMessage());
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "{not json|not valid JSON",
                "[1,2]|not a JSON object",
                "{\"format\":4}|format 4 is not supported (this reader knows 1..3)",
                "{\"format\":3,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"block_bytes\":4096,\"tensors\":[{\"name\":\"t\",\"dtype\":\"U8\","
                        + "\"shape\":[4],\"offset\":0,\"length\":4,\"crc32c\":\"00000000\"}],"
                        + "\"locations\":[]}|missing field 'blocks'",
                "{\"format\":3,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"block_bytes\":4096,\"tensors\":[{\"name\":\"t\",\"dtype\":\"U8\","
                        + "\"shape\":[4],\"offset\":0,\"length\":4,\"crc32c\":\"00000000\",\"blocks\":[]}],"
                        + "\"locations\":[]}|has 0 blocks of 4096 bytes, expected 1",
                "{\"format\":3,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"block_bytes\":4096,\"tensors\":[{\"name\":\"t\",\"dtype\":\"U8\","
                        + "\"shape\":[4],\"offset\":0,\"length\":4,\"crc32c\":\"00000000\","
                        + "\"blocks\":[\"00\"]}],\"locations\":[]}|block 0: ",
                "{\"format\":3,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"block_bytes\":-1,\"tensors\":[],\"locations\":[]}|'block_bytes' is"
                        + " negative",
                "{\"format\":1}|missing field 'model'",
                "{\"format\":1,\"model\":\"m\",\"version\":\"7\"}|'version' is not a 64-bit integer",
                "{\"format\":1,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{\"k\":1},\"tensors\":[],\"locations\":[]}|metadata 'k' is not a string",
                "{\"format\":1,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"tensors\":[{\"name\":\"t\",\"dtype\":\"F128\",\"shape\":[],\"offset\":0,"
                        + "\"length\":4,\"xxh3_128\":\"00000000000000000000000000000000\"}],"
                        + "\"locations\":[]}|unknown dtype F128",
                "{\"format\":1,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"tensors\":[{\"name\":\"t\",\"dtype\":\"F32\",\"shape\":[2],\"offset\":0,"
                        + "\"length\":4,\"xxh3_128\":\"00000000000000000000000000000000\"}],"
                        + "\"locations\":[]}|does not match",
                "{\"format\":1,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"tensors\":[{\"name\":\"t\",\"dtype\":\"F32\",\"shape\":[1],\"offset\":4,"
                        + "\"length\":4,\"xxh3_128\":\"00000000000000000000000000000000\"}],"
                        + "\"locations\":[]}|contiguous",
                "{\"format\":1,\"model\":\"m\",\"version\":0,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"tensors\":[],\"locations\":[]}|version must be between 1 and"
                        + " 9007199254740991",
                "{\"format\":1,\"model\":\"m\",\"version\":9223372036854775807,\"producer\":\"p\","
                        + "\"published_at_ms\":0,\"metadata\":{},\"tensors\":[],\"locations\":[]}|version must be"
                        + " between 1 and 9007199254740991",
                "{\"format\":1,\"model\":\"../etc\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"tensors\":[],\"locations\":[]}|invalid model name",
                "{\"format\":1,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"tensors\":[],\"locations\":[{\"uri\":\"tcp://h:1\","
                        + "\"tier\":\"DISK\"}]}|unknown tier DISK",
                "{\"format\":1,\"format\":1}|not valid JSON",
                "{\"format\":1,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":5,"
                        + "\"published_at_us\":4999,\"metadata\":{},\"tensors\":[],"
                        + "\"locations\":[]}|'published_at_us' (4999) is not within 'published_at_ms' (5)",
                "{\"format\":1,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":5,"
                        + "\"published_at_us\":5.5,\"metadata\":{},\"tensors\":[],\"locations\":[]}|'published_at_us'"
                        + " is not a 64-bit integer",
                "{\"format\":1,\"model\":\"m\",\"version\":1,\"producer\":\"p\","
                        + "\"published_at_ms\":9223372036854775807,\"metadata\":{},\"tensors\":[],"
                        + "\"locations\":[]}|'published_at_ms' is out of range",
                "{\"format\":2,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"tensors\":[{\"name\":\"t\",\"dtype\":\"U8\",\"shape\":[4],\"offset\":0,"
                        + "\"length\":4,\"crc32c\":\"0000000\"}],\"locations\":[]}|expected 8 hex digits",
                "{\"format\":2,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"tensors\":[{\"name\":\"t\",\"dtype\":\"U8\",\"shape\":[4],\"offset\":0,"
                        + "\"length\":4,\"crc32c\":\"0000000g\"}],\"locations\":[]}|not a hex digit",
                "{\"format\":2,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"tensors\":[{\"name\":\"t\",\"dtype\":\"U8\",\"shape\":[4],\"offset\":0,"
                        + "\"length\":4,\"crc32c\":\"00000000\","
                        + "\"xxh3_128\":\"00000000000000000000000000000000\"}],"
                        + "\"locations\":[]}|carries both crc32c and xxh3_128",
                "{\"format\":2,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"tensors\":[{\"name\":\"t\",\"dtype\":\"U8\",\"shape\":[4],\"offset\":0,"
                        + "\"length\":4}],\"locations\":[]}|missing field 'xxh3_128'",
                "{\"format\":1,\"model\":\"m\",\"version\":1,\"producer\":\"p\",\"published_at_ms\":0,"
                        + "\"metadata\":{},\"tensors\":[{\"name\":\"t\",\"dtype\":\"U8\",\"shape\":[4],\"offset\":0,"
                        + "\"length\":4,\"crc32c\":\"00000000\"}],\"locations\":[]}|missing field 'xxh3_128'",
            })
    void malformedManifestsAreRefusedWithAReason(String json, String reason) {
        ViperFormatException e =
                assertThrows(ViperFormatException.class, () -> ManifestCodec.decode(json, "peer 1.2.3.4"));
        assertTrue(e.getMessage().startsWith("peer 1.2.3.4: "), e.getMessage());
        assertTrue(e.getMessage().contains(reason), e.getMessage());
    }

    @Test
    void oversizedInputIsRefusedBeforeParsing() {
        byte[] big = new byte[ManifestCodec.MAX_ENCODED_BYTES + 1];
        assertThrows(ViperFormatException.class, () -> ManifestCodec.decode(big, "x"));
    }

    @Test
    void modelNamesAreChecked() {
        assertEquals("nt3-v1.2_x", Manifest.validateModelName("nt3-v1.2_x"));
        for (String bad : new String[] {"", ".hidden", "a/b", "a b", "ü", "x".repeat(201)}) {
            assertThrows(ViperConfigException.class, () -> Manifest.validateModelName(bad), bad);
        }
    }
}
