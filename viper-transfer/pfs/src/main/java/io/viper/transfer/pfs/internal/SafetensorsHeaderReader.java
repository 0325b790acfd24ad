package io.viper.transfer.pfs.internal;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

/**
 * A small validating parser of safetensors headers, for files of the PFS repository that may be
 * truncated or corrupt. It checks what the reference implementation checks: the length prefix fits
 * the file and the 100 MB limit, the header is a UTF-8 JSON object starting with '{',
 * {@code __metadata__} maps strings to strings, every tensor has a known dtype, a non-negative
 * shape and {@code data_offsets} that match dtype x shape, and the tensors, sorted by offset, cover
 * the data section contiguously from 0 to the end of the file. Errors are
 * {@link ViperFormatException}s naming the file. Stateless and thread-safe.
 */
final class SafetensorsHeaderReader {
    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .build();

    static {
        MAPPER.getFactory().setStreamReadConstraints(StreamReadConstraints.builder()
                .maxNestingDepth(16)
                .maxStringLength((int) SafetensorsHeaderWriter.MAX_HEADER_BYTES)
                .build());
    }

    private SafetensorsHeaderReader() {
    }

    /**
     * The parsed head of a safetensors file.
     *
     * @param dataStart  file offset of the data section (8 + header length)
     * @param dataLength bytes in the data section (to the end of the file)
     * @param tensors    tensors in data order (offsets relative to the data section)
     * @param metadata   the {@code __metadata__} entries (empty when absent)
     */
    record Header(long dataStart, long dataLength, List<TensorInfo> tensors, SequencedMap<String, String> metadata) {

        /**
         * Checks that this header describes exactly {@code manifest}'s tensors (names, dtypes, shapes,
         * offsets and lengths); throws {@link ViperFormatException} naming {@code source} otherwise.
         */
        void checkMatches(Manifest manifest, String source) {
            String what = "does not match the manifest of " + manifest.model() + " v" + manifest.version() + ": ";
            Map<String, TensorInfo> byName = new HashMap<>();
            for (TensorInfo t : tensors) {
                byName.put(t.name(), t);
            }
            for (TensorEntry e : manifest.tensors()) {
                TensorInfo expected = e.info();
                TensorInfo actual = byName.get(expected.name());
                if (actual == null) {
                    throw new ViperFormatException(source, what + "tensor '" + expected.name() + "' is missing from the file");
                }
                if (!actual.equals(expected)) {
                    throw new ViperFormatException(source, what + "tensor '" + expected.name() + "' is " + describe(actual)
                            + " in the file but " + describe(expected) + " in the manifest");
                }
            }
            if (tensors.size() != manifest.tensors().size()) {
                throw new ViperFormatException(source, what + "the file holds " + tensors.size() + " tensors, the manifest "
                        + manifest.tensors().size());
            }
            if (dataLength != manifest.totalBytes()) {
                throw new ViperFormatException(source, what + "data section of " + dataLength + " bytes, manifest says "
                        + manifest.totalBytes());
            }
        }

        private static String describe(TensorInfo t) {
            return t.dtype() + Arrays.toString(t.shape()) + " at bytes [" + t.offset() + ", " + (t.offset() + t.length()) + ")";
        }
    }

    /** Parses and validates the header of {@code file}, the whole file mapped or read; {@code source} names it. */
    static Header parse(MemorySegment file, String source) {
        long size = file.byteSize();
        if (size < 8) {
            throw new ViperFormatException(source, "file of " + size + " bytes is too short for a safetensors header (at least 8 bytes)");
        }
        long headerLength = file.get(LE_LONG, 0);
        if (headerLength < 0 || headerLength > SafetensorsHeaderWriter.MAX_HEADER_BYTES) {
            throw new ViperFormatException(source, "safetensors header length " + Long.toUnsignedString(headerLength)
                    + " exceeds the limit of " + SafetensorsHeaderWriter.MAX_HEADER_BYTES + " bytes");
        }
        if (8 + headerLength > size) {
            throw new ViperFormatException(source, "safetensors header length " + headerLength + " runs past the end of the "
                    + size + "-byte file (truncated?)");
        }
        byte[] json = file.asSlice(8, headerLength).toArray(ValueLayout.JAVA_BYTE);
        if (json.length == 0 || json[0] != '{') {
            throw new ViperFormatException(source, "safetensors header does not start with '{'");
        }
        JsonNode root;
        try {
            root = MAPPER.readTree(json);
        } catch (IOException e) {
            throw new ViperFormatException(source, "safetensors header is not valid JSON: " + firstLine(e.getMessage()));
        }
        if (root == null || !root.isObject()) {
            throw new ViperFormatException(source, "safetensors header is not a JSON object");
        }
        long dataStart = 8 + headerLength;
        long dataLength = size - dataStart;
        SequencedMap<String, String> metadata = new LinkedHashMap<>();
        List<TensorInfo> tensors = new ArrayList<>();
        for (Map.Entry<String, JsonNode> e : root.properties()) {
            String name = e.getKey();
            JsonNode node = e.getValue();
            if (SafetensorsHeaderWriter.METADATA_KEY.equals(name)) {
                readMetadata(node, metadata, source);
                continue;
            }
            if (!node.isObject()) {
                throw new ViperFormatException(source, "tensor '" + name + "': header entry is not a JSON object");
            }
            JsonNode dtypeNode = node.get("dtype");
            if (dtypeNode == null || !dtypeNode.isTextual()) {
                throw new ViperFormatException(source, "tensor '" + name + "': missing or non-string 'dtype'");
            }
            DType dtype = DType.fromSafetensorsName(dtypeNode.textValue()).orElseThrow(() ->
                    new ViperFormatException(source, "tensor '" + name + "': unsupported dtype '" + dtypeNode.textValue() + "'"));
            long[] shape = longs(node.get("shape"), "shape", name, -1, source);
            long[] range = longs(node.get("data_offsets"), "data_offsets", name, 2, source);
            long begin = range[0];
            long end = range[1];
            if (end < begin) {
                throw new ViperFormatException(source, "tensor '" + name + "': data_offsets [" + begin + ", " + end + "] end before they begin");
            }
            long expected;
            try {
                expected = TensorInfo.byteSize(dtype, shape);
            } catch (ArithmeticException overflow) {
                throw new ViperFormatException(source, "tensor '" + name + "': shape " + Arrays.toString(shape) + " overflows 64 bits");
            }
            if (end - begin != expected) {
                throw new ViperFormatException(source, "tensor '" + name + "': data_offsets [" + begin + ", " + end + "] hold "
                        + (end - begin) + " bytes but " + dtype + " x " + Arrays.toString(shape) + " needs " + expected);
            }
            try {
                tensors.add(new TensorInfo(name, dtype, shape, begin, end - begin));
            } catch (ViperException invalid) {
                throw new ViperFormatException(source, "tensor '" + name + "': " + invalid.getMessage());
            }
        }
        tensors.sort(Comparator.comparingLong(TensorInfo::offset).thenComparingLong(TensorInfo::length).thenComparing(TensorInfo::name));
        long expectedOffset = 0;
        for (TensorInfo t : tensors) {
            if (t.offset() != expectedOffset) {
                throw new ViperFormatException(source, "tensor '" + t.name() + "': starts at byte " + t.offset() + " of the data section, expected "
                        + expectedOffset + " (tensors must cover the data contiguously)");
            }
            expectedOffset = t.offset() + t.length();
        }
        if (expectedOffset != dataLength) {
            throw new ViperFormatException(source, "tensors end at byte " + expectedOffset + " of the data section but the file holds "
                    + dataLength + " data bytes" + (expectedOffset > dataLength ? " (truncated?)" : " (trailing bytes)"));
        }
        return new Header(dataStart, dataLength, List.copyOf(tensors), metadata);
    }

    private static void readMetadata(JsonNode node, Map<String, String> into, String source) {
        if (node.isNull()) {
            return;
        }
        if (!node.isObject()) {
            throw new ViperFormatException(source, "safetensors __metadata__ is not a JSON object");
        }
        for (Map.Entry<String, JsonNode> m : node.properties()) {
            if (!m.getValue().isTextual()) {
                throw new ViperFormatException(source, "safetensors __metadata__ value of '" + m.getKey() + "' is not a string");
            }
            into.put(m.getKey(), m.getValue().textValue());
        }
    }

    /** A JSON array of non-negative 64-bit integers; {@code count} < 0 means any length. */
    private static long[] longs(JsonNode node, String field, String tensor, int count, String source) {
        if (node == null || !node.isArray()) {
            throw new ViperFormatException(source, "tensor '" + tensor + "': missing or non-array '" + field + "'");
        }
        if (count >= 0 && node.size() != count) {
            throw new ViperFormatException(source, "tensor '" + tensor + "': '" + field + "' must hold " + count + " numbers, has " + node.size());
        }
        long[] out = new long[node.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode v = node.get(i);
            if (!v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < 0) {
                throw new ViperFormatException(source, "tensor '" + tensor + "': '" + field + "' holds " + v + ", not a non-negative integer");
            }
            out[i] = v.longValue();
        }
        return out;
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
