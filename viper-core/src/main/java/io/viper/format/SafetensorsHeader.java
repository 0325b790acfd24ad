package io.viper.format;

import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SequencedMap;

/**
 * The validated header of a safetensors file: the stored header length, the size of the data section, the
 * {@code __metadata__} entries and the tensors in data order (sorted by start offset, whatever order the JSON lists
 * them in).
 *
 * <p>A file is laid out as an 8-byte little-endian header length {@code n}, {@code n} bytes of UTF-8 JSON (padded with
 * spaces), then the data section. {@link #parse} validates a whole file image with the rules of the reference
 * implementation (huggingface/safetensors), see {@link SafetensorsFile}. Immutable and safe to share between threads;
 * holds no memory of the file it was parsed from.
 *
 * @param headerBytes the stored JSON header length {@code n}, padding included
 * @param dataBytes the size of the data section: the file size minus {@code 8 + n}
 * @param metadata the {@code __metadata__} entries in file order (empty when absent)
 * @param tensors the tensors in data order; offsets are relative to the start of the data section
 */
public record SafetensorsHeader(
        long headerBytes, long dataBytes, SequencedMap<String, String> metadata, List<TensorInfo> tensors) {

    /** The largest header length accepted, as in the reference implementation (100,000,000 bytes). */
    public static final long MAX_HEADER_BYTES = 100_000_000L;

    /** Size of the little-endian header length that starts every file. */
    public static final int LENGTH_PREFIX_BYTES = 8;

    /** The key of the string-to-string metadata map in the JSON header. */
    public static final String METADATA_KEY = "__metadata__";

    public SafetensorsHeader {
        if (headerBytes < 0 || dataBytes < 0) {
            throw new IllegalArgumentException("negative header or data size (" + headerBytes + ", " + dataBytes + ")");
        }
        LinkedHashMap<String, String> copy = new LinkedHashMap<>();
        Objects.requireNonNull(metadata, "metadata")
                .forEach((k, v) -> copy.put(
                        Objects.requireNonNull(k, "metadata key"), Objects.requireNonNull(v, "metadata value")));
        metadata = Collections.unmodifiableSequencedMap(copy);
        tensors = List.copyOf(tensors);
    }

    /** Offset of the data section from the start of the file: {@code 8 + headerBytes}. */
    public long dataStart() {
        return LENGTH_PREFIX_BYTES + headerBytes;
    }

    /** The size of the whole file: {@code 8 + headerBytes + dataBytes}. */
    public long fileBytes() {
        return dataStart() + dataBytes;
    }

    /**
     * Validates {@code file}, the complete image of a safetensors file (typically a memory mapping), and returns its
     * header. Reads only the length prefix and the JSON header; the data section is checked against the header's
     * offsets but not read.
     *
     * @param source names the file (or peer) in error messages, e.g. the path as the user gave it
     * @throws io.viper.errors.ViperFormatException with {@code source} and a one-line problem that names the tensor
     *     where one applies
     */
    public static SafetensorsHeader parse(String source, MemorySegment file) {
        return HeaderParser.parse(Objects.requireNonNull(source, "source"), Objects.requireNonNull(file, "file"));
    }

    /**
     * The bytes that start a file holding {@code tensors} (in data order, laid out contiguously from offset 0) and
     * {@code metadata}: the 8-byte length prefix and the compact JSON header with {@code __metadata__} first (omitted
     * when empty), padded with spaces to a multiple of 8 bytes.
     *
     * @throws IllegalArgumentException when the offsets are not contiguous from 0, a name repeats or is
     *     {@code __metadata__}
     */
    public static byte[] encode(List<TensorInfo> tensors, Map<String, String> metadata) {
        return HeaderEncoder.encode(tensors, metadata);
    }
}
