package io.viper.format;

import static io.viper.format.SafetensorsHeader.LENGTH_PREFIX_BYTES;
import static io.viper.format.SafetensorsHeader.MAX_HEADER_BYTES;
import static io.viper.format.SafetensorsHeader.METADATA_KEY;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import io.viper.tensor.TensorInfo;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Writes the length prefix and JSON header of a safetensors file the way the reference implementation does: compact
 * JSON, {@code __metadata__} first, tensors in data order, padded with spaces to a multiple of 8 bytes so that the data
 * section starts 8-byte aligned. Stateless; thread-safe.
 */
final class HeaderEncoder {
    private static final JsonFactory JSON = new JsonFactory();

    private HeaderEncoder() {}

    static byte[] encode(List<TensorInfo> tensors, Map<String, String> metadata) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256 + 96 * tensors.size());
        out.writeBytes(new byte[LENGTH_PREFIX_BYTES]);
        Set<String> names = new HashSet<>();
        long offset = 0;
        try (JsonGenerator g = JSON.createGenerator(out, JsonEncoding.UTF8)) {
            g.writeStartObject();
            if (!metadata.isEmpty()) {
                g.writeObjectFieldStart(METADATA_KEY);
                for (Map.Entry<String, String> e : metadata.entrySet()) {
                    g.writeStringField(e.getKey(), e.getValue());
                }
                g.writeEndObject();
            }
            for (TensorInfo t : tensors) {
                if (t.name().equals(METADATA_KEY)) {
                    throw new IllegalArgumentException("tensor name " + METADATA_KEY + " is reserved for the metadata");
                }
                if (!names.add(t.name())) {
                    throw new IllegalArgumentException("duplicate tensor name " + HeaderParser.quote(t.name()));
                }
                if (t.offset() != offset) {
                    throw new IllegalArgumentException(HeaderParser.tensor(t.name()) + "offset " + t.offset()
                            + " does not follow the previous tensor, which ends at " + offset);
                }
                g.writeFieldName(t.name());
                g.writeStartObject();
                g.writeStringField("dtype", t.dtype().safetensorsName());
                g.writeFieldName("shape");
                long[] shape = t.shape();
                g.writeArray(shape, 0, shape.length);
                g.writeFieldName("data_offsets");
                g.writeArray(new long[] {t.offset(), t.offset() + t.length()}, 0, 2);
                g.writeEndObject();
                offset = Math.addExact(offset, t.length());
            }
            g.writeEndObject();
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("header cannot be written as UTF-8 JSON: " + e.getOriginalMessage(), e);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        int jsonLength = out.size() - LENGTH_PREFIX_BYTES;
        int padding = (8 - jsonLength % 8) % 8;
        byte[] spaces = new byte[padding];
        Arrays.fill(spaces, (byte) ' ');
        out.writeBytes(spaces);
        long headerLength = (long) jsonLength + padding;
        if (headerLength > MAX_HEADER_BYTES) {
            throw new IllegalArgumentException(
                    "header of " + headerLength + " bytes exceeds the limit of " + MAX_HEADER_BYTES + " bytes");
        }
        byte[] bytes = out.toByteArray();
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putLong(0, headerLength);
        return bytes;
    }
}
