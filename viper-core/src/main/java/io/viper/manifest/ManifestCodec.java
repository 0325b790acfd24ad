package io.viper.manifest;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.hash.ContentHash;
import io.viper.hash.HashAlgorithm;
import io.viper.hash.ParallelHash64;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * The wire and disk encoding of a {@link Manifest}: UTF-8 JSON, format version 1 to {@value #FORMAT_VERSION}.
 *
 * <pre>{@code
 * {"format": 2,
 *  "model": "nt3", "version": 7, "producer": "host:4242",
 *  "published_at_ms": 1763795000000, "published_at_us": 1763795000000123,
 *  "metadata": {"viper.iteration": "700", "viper.loss": "0.31"},
 *  "tensors": [{"name": "dense.weight", "dtype": "F32", "shape": [64, 10],
 *               "offset": 0, "length": 2560, "crc32c": "8 hex", "phash64": "16 hex (optional)"}],
 *  "total_bytes": 2560,
 *  "locations": [{"uri": "ucx://127.0.0.1:40123", "tier": "HOST"},
 *                {"uri": "file:///pfs/nt3/7/model.safetensors", "tier": "PFS"}]}
 * }</pre>
 *
 * <p>Each tensor carries its hash in the field its {@link HashAlgorithm} names: {@code crc32c} (8 hex digits) or
 * {@code xxh3_128} (32 hex digits). A manifest whose tensors all carry XXH3-128 is written as format 1, byte for byte
 * what earlier versions wrote and read; one with a CRC32C is format 2, which readers of format 1 refuse by its number
 * rather than misread.
 *
 * <p>Format 3 adds content-addressed blocks ({@link BlockList}): {@code "block_bytes": 1048576} at the top and per
 * tensor {@code "blocks": ["32 hex", ...]}, one XXH3-128 per block. A manifest with blocks is written as format 3, so
 * that readers before it refuse it by number (a PFS version of format 3 keeps its bytes in the block store, where they
 * would not look); one without blocks is written as before. A reader sees a manifest without {@code block_bytes} as one
 * without blocks.
 *
 * <p>{@code published_at_us} is the publish time in microseconds, {@code published_at_ms} the same in whole
 * milliseconds for readers before it. A reader takes the microseconds when they are there (they must fall within that
 * millisecond) and the millisecond otherwise.
 *
 * <p>Readers refuse a newer {@code format} than they know, and any missing or mistyped field, with a
 * {@link ViperFormatException} naming the source. Unknown extra fields are ignored so that later minor additions stay
 * readable. The per-tensor {@code phash64} (the GPU-side check hash, {@link ParallelHash64}) is optional: producers
 * without GPU locations leave it out, and readers of older manifests see it empty. Thread-safe.
 */
public final class ManifestCodec {
    /** The newest format version this codec writes and reads (3: content-addressed blocks). */
    public static final int FORMAT_VERSION = 3;
    /** The format of manifests with CRC32C tensor hashes and no blocks. */
    public static final int FORMAT_CRC32C = 2;
    /** The format of manifests whose tensors all carry XXH3-128, which every reader knows. */
    public static final int FORMAT_XXH3 = 1;
    /** Largest encoded manifest accepted (a model with about 100,000 tensors). */
    public static final int MAX_ENCODED_BYTES = 32 * 1024 * 1024;

    /** Encoded manifests start in a buffer of this size: a model of a few tensors fits. */
    private static final int ESTIMATED_BYTES = 2048;

    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .build();

    static {
        MAPPER.getFactory()
                .setStreamReadConstraints(
                        StreamReadConstraints.builder().maxNestingDepth(16).build());
    }

    private ManifestCodec() {}

    /** Encodes {@code m} as compact UTF-8 JSON. */
    public static byte[] encode(Manifest m) {
        boolean xxh3Only = m.tensors().stream().allMatch(t -> t.hash().algorithm() == HashAlgorithm.XXH3_128);
        boolean blocks = m.blockBytes() > 0;
        // Written token by token: building a tree first made encoding take 1.6x as long
        // (ManifestCodecBenchmark), and every announcement encodes one.
        ByteArrayBuilder out = new ByteArrayBuilder(ESTIMATED_BYTES);
        try (JsonGenerator g = MAPPER.getFactory().createGenerator(out)) {
            g.writeStartObject();
            g.writeNumberField("format", blocks ? FORMAT_VERSION : xxh3Only ? FORMAT_XXH3 : FORMAT_CRC32C);
            g.writeStringField("model", m.model());
            g.writeNumberField("version", m.version());
            g.writeStringField("producer", m.producerId());
            g.writeNumberField("published_at_ms", m.publishedAtMs());
            g.writeNumberField("published_at_us", m.publishedAtMicros());
            g.writeObjectFieldStart("metadata");
            for (Map.Entry<String, String> e : m.metadata().entrySet()) {
                g.writeStringField(e.getKey(), e.getValue());
            }
            g.writeEndObject();
            g.writeArrayFieldStart("tensors");
            for (TensorEntry t : m.tensors()) {
                TensorInfo i = t.info();
                g.writeStartObject();
                g.writeStringField("name", i.name());
                g.writeStringField("dtype", i.dtype().safetensorsName());
                g.writeArrayFieldStart("shape");
                for (long d : i.shape()) {
                    g.writeNumber(d);
                }
                g.writeEndArray();
                g.writeNumberField("offset", i.offset());
                g.writeNumberField("length", i.length());
                g.writeStringField(t.hash().algorithm().fieldName(), t.hash().toHex());
                if (t.phash64().isPresent()) {
                    g.writeStringField(
                            "phash64", ParallelHash64.toHex(t.phash64().getAsLong()));
                }
                if (blocks) {
                    g.writeArrayFieldStart("blocks");
                    for (ContentHash id : t.blocks().ids()) {
                        g.writeString(id.toHex());
                    }
                    g.writeEndArray();
                }
                g.writeEndObject();
            }
            g.writeEndArray();
            if (blocks) {
                g.writeNumberField("block_bytes", m.blockBytes());
            }
            g.writeNumberField("total_bytes", m.totalBytes());
            g.writeArrayFieldStart("locations");
            for (Location l : m.locations()) {
                g.writeStartObject();
                g.writeStringField("uri", l.uri().toString());
                g.writeStringField("tier", l.tier().name());
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        } catch (IOException e) {
            throw new ViperException(
                    ViperException.Reason.INTERNAL, "cannot encode manifest " + m.model() + " v" + m.version(), e);
        }
        return out.toByteArray();
    }

    /** Decodes a manifest; {@code source} names where the bytes came from, for error messages. */
    public static Manifest decode(byte[] bytes, String source) {
        if (bytes.length > MAX_ENCODED_BYTES) {
            throw new ViperFormatException(
                    source, "manifest of " + bytes.length + " bytes exceeds the limit of " + MAX_ENCODED_BYTES);
        }
        JsonNode root;
        try {
            root = MAPPER.readTree(bytes);
        } catch (IOException e) {
            throw new ViperFormatException(source, "manifest is not valid JSON: " + firstLine(e.getMessage()));
        }
        if (root == null || !root.isObject()) {
            throw new ViperFormatException(source, "manifest is not a JSON object");
        }
        long format = integer(root, "format", source);
        if (format < 1 || format > FORMAT_VERSION) {
            throw new ViperFormatException(
                    source,
                    "manifest format " + format + " is not supported (this reader knows 1.." + FORMAT_VERSION + ")");
        }
        try {
            String model = text(root, "model", source);
            long version = integer(root, "version", source);
            String producer = text(root, "producer", source);
            long publishedAt = publishedAtMicros(root, source);
            LinkedHashMap<String, String> meta = new LinkedHashMap<>();
            JsonNode metaNode = field(root, "metadata", source);
            if (!metaNode.isObject()) {
                throw new ViperFormatException(source, "manifest field 'metadata' is not an object");
            }
            for (Iterator<Map.Entry<String, JsonNode>> it =
                            metaNode.properties().iterator();
                    it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                if (!e.getValue().isTextual()) {
                    throw new ViperFormatException(source, "manifest metadata '" + e.getKey() + "' is not a string");
                }
                meta.put(e.getKey(), e.getValue().textValue());
            }
            long blockBytes = format >= 3 && root.has("block_bytes") ? integer(root, "block_bytes", source) : 0;
            if (blockBytes < 0) {
                throw new ViperFormatException(source, "manifest field 'block_bytes' is negative");
            }
            List<TensorEntry> tensors = new ArrayList<>();
            for (JsonNode t : array(root, "tensors", source)) {
                if (!t.isObject()) {
                    throw new ViperFormatException(source, "manifest tensor entry is not an object");
                }
                String name = text(t, "name", source);
                String dtypeName = text(t, "dtype", source);
                DType dtype = DType.fromSafetensorsName(dtypeName)
                        .orElseThrow(() ->
                                new ViperFormatException(source, "tensor '" + name + "': unknown dtype " + dtypeName));
                List<Long> dims = new ArrayList<>();
                for (JsonNode d : array(t, "shape", source)) {
                    if (!d.canConvertToLong() || !d.isIntegralNumber() || d.longValue() < 0) {
                        throw new ViperFormatException(
                                source,
                                "tensor '" + name + "': shape holds a value that is not a non-negative integer");
                    }
                    dims.add(d.longValue());
                }
                long[] shape = dims.stream().mapToLong(Long::longValue).toArray();
                long offset = integer(t, "offset", source);
                long length = integer(t, "length", source);
                ContentHash hash;
                try {
                    hash = tensorHash(t, name, format, source);
                } catch (ViperFormatException e) {
                    throw e;
                } catch (ViperException | IllegalArgumentException e) {
                    throw new ViperFormatException(source, "tensor '" + name + "': " + e.getMessage());
                }
                OptionalLong phash = OptionalLong.empty();
                if (t.has("phash64")) {
                    try {
                        phash = OptionalLong.of(ParallelHash64.parseHex(text(t, "phash64", source)));
                    } catch (IllegalArgumentException e) {
                        throw new ViperFormatException(source, "tensor '" + name + "': " + e.getMessage());
                    }
                }
                tensors.add(new TensorEntry(
                        new TensorInfo(name, dtype, shape, offset, length),
                        hash,
                        phash,
                        blocks(t, name, blockBytes, source)));
            }
            List<Location> locations = new ArrayList<>();
            for (JsonNode l : array(root, "locations", source)) {
                String uri = text(l, "uri", source);
                String tierName = text(l, "tier", source);
                Tier tier;
                try {
                    tier = Tier.valueOf(tierName);
                } catch (IllegalArgumentException e) {
                    throw new ViperFormatException(source, "location '" + uri + "': unknown tier " + tierName);
                }
                try {
                    locations.add(new Location(new URI(uri), tier));
                } catch (URISyntaxException e) {
                    throw new ViperFormatException(source, "location '" + uri + "' is not a URI: " + e.getReason());
                }
            }
            Manifest m = new Manifest(model, version, producer, publishedAt, meta, tensors, locations);
            JsonNode total = root.get("total_bytes");
            if (total != null && (!total.canConvertToLong() || total.longValue() != m.totalBytes())) {
                throw new ViperFormatException(
                        source, "manifest total_bytes " + total + " does not match the tensors' " + m.totalBytes());
            }
            return m;
        } catch (ViperFormatException e) {
            throw e;
        } catch (ViperException | ArithmeticException e) {
            throw new ViperFormatException(source, "invalid manifest: " + e.getMessage());
        }
    }

    /** The tensor's hash: {@code xxh3_128}, or from format 2 on {@code crc32c} instead. */
    private static ContentHash tensorHash(JsonNode t, String name, long format, String source) {
        boolean crc = format >= 2 && t.has(HashAlgorithm.CRC32C.fieldName());
        if (crc && t.has(HashAlgorithm.XXH3_128.fieldName())) {
            throw new ViperFormatException(
                    source, "tensor '" + name + "' carries both crc32c and xxh3_128; one hash per tensor");
        }
        HashAlgorithm a = crc ? HashAlgorithm.CRC32C : HashAlgorithm.XXH3_128;
        String hex = text(t, a.fieldName(), source);
        try {
            return ContentHash.parseHex(a, hex);
        } catch (ViperFormatException e) {
            throw new ViperFormatException(source, "tensor '" + name + "': " + e.getMessage());
        }
    }

    /** The tensor's {@code blocks}, which a manifest with {@code block_bytes} must give for every tensor. */
    private static BlockList blocks(JsonNode t, String name, long blockBytes, String source) {
        if (blockBytes == 0) {
            return BlockList.NONE;
        }
        List<ContentHash> ids = new ArrayList<>();
        for (JsonNode id : array(t, "blocks", source)) {
            if (!id.isTextual()) {
                throw new ViperFormatException(source, "tensor '" + name + "': a block id is not a string");
            }
            try {
                ids.add(ContentHash.parseHex(BlockList.ID_ALGORITHM, id.textValue()));
            } catch (ViperFormatException e) {
                throw new ViperFormatException(
                        source, "tensor '" + name + "': block " + ids.size() + ": " + e.getMessage());
            }
        }
        return new BlockList(blockBytes, ids);
    }

    /** Decodes a manifest from a UTF-8 string. */
    public static Manifest decode(String json, String source) {
        return decode(json.getBytes(StandardCharsets.UTF_8), source);
    }

    private static JsonNode field(JsonNode o, String name, String source) {
        JsonNode n = o.get(name);
        if (n == null || n.isNull()) {
            throw new ViperFormatException(source, "manifest is missing field '" + name + "'");
        }
        return n;
    }

    private static String text(JsonNode o, String name, String source) {
        JsonNode n = field(o, name, source);
        if (!n.isTextual()) {
            throw new ViperFormatException(source, "manifest field '" + name + "' is not a string");
        }
        return n.textValue();
    }

    /**
     * The publish time in microseconds: {@code published_at_us}, checked against {@code published_at_ms}, or the latter
     * alone.
     */
    private static long publishedAtMicros(JsonNode root, String source) {
        long ms = integer(root, "published_at_ms", source);
        if (root.get("published_at_us") == null) {
            try {
                return Math.multiplyExact(ms, 1_000L);
            } catch (ArithmeticException e) {
                throw new ViperFormatException(source, "manifest field 'published_at_ms' is out of range: " + ms);
            }
        }
        long us = integer(root, "published_at_us", source);
        if (Math.floorDiv(us, 1_000L) != ms) {
            throw new ViperFormatException(
                    source,
                    "manifest field 'published_at_us' (" + us + ") is not within 'published_at_ms' (" + ms + ")");
        }
        return us;
    }

    private static long integer(JsonNode o, String name, String source) {
        JsonNode n = field(o, name, source);
        if (!n.isIntegralNumber() || !n.canConvertToLong()) {
            throw new ViperFormatException(source, "manifest field '" + name + "' is not a 64-bit integer");
        }
        return n.longValue();
    }

    private static Iterable<JsonNode> array(JsonNode o, String name, String source) {
        JsonNode n = field(o, name, source);
        if (!n.isArray()) {
            throw new ViperFormatException(source, "manifest field '" + name + "' is not an array");
        }
        return n;
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
