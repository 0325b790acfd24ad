package io.viper.format;

import static io.viper.format.SafetensorsHeader.LENGTH_PREFIX_BYTES;
import static io.viper.format.SafetensorsHeader.MAX_HEADER_BYTES;
import static io.viper.format.SafetensorsHeader.METADATA_KEY;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.errors.ViperFormatException;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SequencedMap;

/**
 * Validates a safetensors file image like the reference implementation's {@code SafeTensors::read_metadata} and
 * {@code Metadata::validate}, with one message per failure. Stateless; thread-safe.
 */
final class HeaderParser {
    private static final ValueLayout.OfLong LE_LONG =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final BigInteger MAX_LONG = BigInteger.valueOf(Long.MAX_VALUE);

    /** Jackson's default string and name limits are far below what a 100 MB header may hold. */
    private static final JsonFactory JSON = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder()
                    .maxStringLength((int) MAX_HEADER_BYTES)
                    .maxNameLength((int) MAX_HEADER_BYTES)
                    .build())
            .build();

    private HeaderParser() {}

    /** One tensor entry as read from the JSON, before the layout checks. */
    private record Entry(String name, DType dtype, long[] shape, String shapeText, long begin, long end) {
        String offsets() {
            return "[" + begin + ", " + end + "]";
        }
    }

    static SafetensorsHeader parse(String source, MemorySegment file) {
        long size = file.byteSize();
        if (size < LENGTH_PREFIX_BYTES) {
            throw fail(source, "file is too short: " + size + " bytes, fewer than the 8 bytes of the header length");
        }
        long n = file.get(LE_LONG, 0);
        if (Long.compareUnsigned(n, MAX_HEADER_BYTES) > 0) {
            throw fail(
                    source,
                    "header length " + Long.toUnsignedString(n) + " exceeds the limit of " + MAX_HEADER_BYTES
                            + " bytes");
        }
        if (n > size - LENGTH_PREFIX_BYTES) {
            throw fail(source, "header length " + n + " points past the end of the file (" + size + " bytes)");
        }
        byte[] raw = file.asSlice(LENGTH_PREFIX_BYTES, n).toArray(ValueLayout.JAVA_BYTE);
        String json;
        try {
            json = StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(raw))
                    .toString();
        } catch (CharacterCodingException e) {
            throw fail(source, "header is not valid UTF-8");
        }
        if (json.isEmpty()) {
            throw fail(source, "header is empty, not a JSON object");
        }
        if (json.charAt(0) != '{') {
            throw fail(
                    source,
                    "header is not a JSON object: it starts with " + describeChar(json.codePointAt(0)) + ", not '{'");
        }
        ObjectNode root = readJson(source, json);

        SequencedMap<String, String> metadata = new LinkedHashMap<>();
        List<Entry> entries = new ArrayList<>();
        for (Map.Entry<String, JsonNode> field : root.properties()) {
            if (field.getKey().equals(METADATA_KEY)) {
                readMetadata(source, field.getValue(), metadata);
            } else {
                entries.add(readEntry(source, field.getKey(), field.getValue()));
            }
        }

        // Data order: by (begin, end) like the reference; List.sort is stable, so ties keep JSON order.
        entries.sort(Comparator.comparingLong(Entry::begin).thenComparingLong(Entry::end));
        long dataBytes = size - LENGTH_PREFIX_BYTES - n;
        List<TensorInfo> tensors = new ArrayList<>(entries.size());
        long end = 0;
        Entry previous = null;
        for (Entry e : entries) {
            if (e.end < e.begin) {
                throw fail(source, tensor(e.name) + "data_offsets " + e.offsets() + " end before they begin");
            }
            if (e.begin < end) {
                throw fail(
                        source,
                        tensor(e.name) + "data_offsets " + e.offsets() + " overlap tensor " + quote(previous.name)
                                + ", which ends at " + end);
            }
            if (e.begin > end) {
                throw fail(
                        source,
                        tensor(e.name) + "data_offsets " + e.offsets() + " leave a hole of " + (e.begin - end)
                                + " bytes after "
                                + (previous == null ? "the start of the data" : "tensor " + quote(previous.name)));
            }
            long expected;
            try {
                expected = TensorInfo.byteSize(e.dtype, e.shape);
            } catch (ArithmeticException overflow) {
                throw fail(
                        source,
                        tensor(e.name) + "the byte size of " + e.dtype + " x " + e.shapeText + " overflows 64 bits");
            }
            long length = e.end - e.begin;
            if (length != expected) {
                throw fail(
                        source,
                        tensor(e.name) + "data_offsets " + e.offsets() + " hold " + length
                                + " bytes, which does not match " + e.dtype + " x " + e.shapeText + " = " + expected
                                + " bytes");
            }
            tensors.add(new TensorInfo(e.name, e.dtype, e.shape, e.begin, length));
            end = e.end;
            previous = e;
        }
        if (end > dataBytes) {
            throw fail(
                    source,
                    tensor(previous.name) + "data is truncated: the tensor ends at byte " + end
                            + " of the data section but the file holds only " + dataBytes + " data bytes");
        }
        if (end < dataBytes) {
            throw fail(
                    source,
                    (dataBytes - end) + " trailing bytes after the last tensor (the data section holds " + dataBytes
                            + " bytes, the tensors end at " + end + ")");
        }
        return new SafetensorsHeader(n, dataBytes, metadata, tensors);
    }

    private static ObjectNode readJson(String source, String json) {
        try (JsonParser p = JSON.createParser(json)) {
            JsonNode root = readValue(source, p, p.nextToken(), 0, null);
            JsonToken extra = p.nextToken();
            if (extra != null) {
                throw fail(
                        source,
                        "header is not valid JSON: unexpected " + extra.asString() + " after the object"
                                + at(p.currentTokenLocation()));
            }
            return (ObjectNode) root; // the first character is '{', so the root is an object
        } catch (JsonProcessingException e) {
            throw fail(source, "header is not valid JSON: " + firstLine(e.getOriginalMessage()) + at(e.getLocation()));
        } catch (IOException e) {
            throw fail(source, "header is not valid JSON: " + firstLine(e.getMessage()));
        }
    }

    /**
     * Builds a tree from the parser's tokens, refusing duplicate keys (Jackson's tree model would keep the last one
     * silently). {@code owner} is the top-level key the value belongs to.
     */
    private static JsonNode readValue(String source, JsonParser p, JsonToken token, int depth, String owner)
            throws IOException {
        JsonNodeFactory nodes = JsonNodeFactory.instance;
        if (token == null) {
            throw fail(source, "header is not valid JSON: unexpected end of input");
        }
        return switch (token) {
            case START_OBJECT -> {
                ObjectNode object = nodes.objectNode();
                for (JsonToken t = p.nextToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
                    String key = p.currentName();
                    String child = depth == 0 ? key : owner;
                    JsonNode value = readValue(source, p, p.nextToken(), depth + 1, child);
                    if (object.has(key)) {
                        throw fail(source, duplicate(depth, owner, key));
                    }
                    object.set(key, value);
                }
                yield object;
            }
            case START_ARRAY -> {
                ArrayNode array = nodes.arrayNode();
                for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
                    array.add(readValue(source, p, t, depth + 1, owner));
                }
                yield array;
            }
            case VALUE_STRING -> nodes.textNode(p.getText());
            case VALUE_NUMBER_INT ->
                switch (p.getNumberType()) {
                    case INT, LONG -> nodes.numberNode(p.getLongValue());
                    default -> nodes.numberNode(p.getBigIntegerValue());
                };
            case VALUE_NUMBER_FLOAT -> nodes.numberNode(p.getDoubleValue());
            case VALUE_TRUE, VALUE_FALSE -> nodes.booleanNode(token == JsonToken.VALUE_TRUE);
            case VALUE_NULL -> nodes.nullNode();
            default ->
                throw fail(
                        source,
                        "header is not valid JSON: unexpected " + token.asString() + at(p.currentTokenLocation()));
        };
    }

    private static String duplicate(int depth, String owner, String key) {
        if (depth == 0) {
            return key.equals(METADATA_KEY)
                    ? "duplicate " + METADATA_KEY + " entry"
                    : "duplicate tensor name " + quote(key);
        }
        String where = METADATA_KEY.equals(owner) ? METADATA_KEY + ": " : tensor(owner);
        return where + "duplicate key " + quote(key);
    }

    private static void readMetadata(String source, JsonNode value, Map<String, String> metadata) {
        if (value.isNull()) {
            return; // the reference reads null as "no metadata"
        }
        if (!value.isObject()) {
            throw fail(source, METADATA_KEY + " is " + article(value) + ", not an object of strings");
        }
        for (Map.Entry<String, JsonNode> e : value.properties()) {
            if (!e.getValue().isTextual()) {
                throw fail(
                        source,
                        METADATA_KEY + " value of " + quote(e.getKey()) + " is " + article(e.getValue())
                                + ", not a string");
            }
            metadata.put(e.getKey(), e.getValue().textValue());
        }
    }

    private static Entry readEntry(String source, String name, JsonNode value) {
        String t = tensor(name);
        if (!value.isObject()) {
            throw fail(source, t + "entry is " + article(value) + ", not an object with dtype, shape and data_offsets");
        }
        JsonNode dtypeNode = value.get("dtype");
        if (dtypeNode == null) {
            throw fail(source, t + "missing dtype");
        }
        if (!dtypeNode.isTextual()) {
            throw fail(source, t + "dtype is " + article(dtypeNode) + ", not a string");
        }
        DType dtype = DType.fromSafetensorsName(dtypeNode.textValue())
                .orElseThrow(() -> fail(source, t + "unknown dtype " + printable(dtypeNode.textValue())));

        JsonNode shapeNode = value.get("shape");
        if (shapeNode == null) {
            throw fail(source, t + "missing shape");
        }
        String shapeText = printable(shapeNode.toString());
        if (!shapeNode.isArray()) {
            throw fail(source, t + "shape " + shapeText + " is not a list of integers");
        }
        long[] shape = new long[shapeNode.size()];
        for (int i = 0; i < shape.length; i++) {
            JsonNode d = shapeNode.get(i);
            if (!d.isIntegralNumber()) {
                throw fail(source, t + "shape " + shapeText + " is not a list of integers");
            }
            BigInteger dim = d.bigIntegerValue();
            if (dim.signum() < 0) {
                throw fail(source, t + "negative dimension " + dim + " in shape " + shapeText);
            }
            if (dim.compareTo(MAX_LONG) > 0) {
                throw fail(source, t + "dimension " + dim + " in shape " + shapeText + " overflows 64 bits");
            }
            shape[i] = dim.longValueExact();
        }

        JsonNode offsets = value.get("data_offsets");
        if (offsets == null) {
            throw fail(source, t + "missing data_offsets");
        }
        if (!offsets.isArray()
                || offsets.size() != 2
                || !offsets.get(0).isIntegralNumber()
                || !offsets.get(1).isIntegralNumber()
                || offsets.get(0).bigIntegerValue().signum() < 0
                || offsets.get(1).bigIntegerValue().signum() < 0) {
            throw fail(
                    source,
                    t + "data_offsets " + printable(offsets.toString())
                            + " are not two non-negative integers [begin, end]");
        }
        BigInteger begin = offsets.get(0).bigIntegerValue();
        BigInteger end = offsets.get(1).bigIntegerValue();
        if (begin.compareTo(MAX_LONG) > 0 || end.compareTo(MAX_LONG) > 0) {
            throw fail(source, t + "data_offsets " + printable(offsets.toString()) + " lie past the end of any file");
        }
        return new Entry(name, dtype, shape, shapeText, begin.longValueExact(), end.longValueExact());
    }

    private static ViperFormatException fail(String source, String problem) {
        return new ViperFormatException(source, problem);
    }

    /** "tensor 'name': " */
    static String tensor(String name) {
        return "tensor " + quote(name) + ": ";
    }

    /** The name in single quotes, control characters escaped so that messages stay on one line. */
    static String quote(String name) {
        return "'" + printable(name) + "'";
    }

    /** {@code s} with control characters escaped, cut to 200 characters. */
    static String printable(String s) {
        StringBuilder b = new StringBuilder(Math.min(s.length(), 210));
        for (int i = 0; i < s.length(); i++) {
            if (b.length() >= 200) {
                return b.append("...").toString();
            }
            char c = s.charAt(i);
            if (c < 0x20 || c == 0x7f || c == 0x2028 || c == 0x2029) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    private static String describeChar(int codePoint) {
        if (codePoint < 0x20 || codePoint == 0x7f) {
            return String.format("byte 0x%02x", codePoint);
        }
        return "'" + Character.toString(codePoint) + "'";
    }

    private static String article(JsonNode node) {
        return switch (node.getNodeType()) {
            case ARRAY -> "an array";
            case OBJECT -> "an object";
            case NUMBER -> "a number";
            case BOOLEAN -> "a boolean";
            case NULL -> "null";
            case STRING -> "a string";
            default -> "a " + node.getNodeType().name().toLowerCase(Locale.ROOT);
        };
    }

    private static String at(JsonLocation location) {
        if (location == null || location.getCharOffset() < 0) {
            return "";
        }
        return " at character " + location.getCharOffset();
    }

    private static String firstLine(String message) {
        if (message == null || message.isBlank()) {
            return "malformed";
        }
        int nl = message.indexOf('\n');
        return printable(nl < 0 ? message : message.substring(0, nl));
    }
}
