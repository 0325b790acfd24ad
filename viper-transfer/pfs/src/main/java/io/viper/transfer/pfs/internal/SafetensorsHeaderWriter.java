package io.viper.transfer.pfs.internal;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.tensor.TensorInfo;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Map;

/**
 * Encodes the head of a standard safetensors file for a manifest: the 8-byte little-endian header
 * length, then the JSON header ({@code __metadata__} with the manifest's string metadata, then one
 * {@code {"dtype","shape","data_offsets":[begin,end]}} entry per tensor in data order), padded with
 * spaces to a multiple of 8 bytes so that the data section that follows starts 8-aligned.
 *
 * <p>All safetensors header logic of the PFS repository is in this one class, so that it can be
 * replaced by viper-core's {@code SafetensorsWriter} without touching the rest. Stateless.
 */
final class SafetensorsHeaderWriter {
    /** The reference implementation refuses headers larger than this. */
    static final long MAX_HEADER_BYTES = 100_000_000L;
    /** The JSON key of the metadata object. */
    static final String METADATA_KEY = "__metadata__";

    private static final JsonFactory JSON = new JsonFactory();

    private SafetensorsHeaderWriter() {
    }

    /**
     * The bytes that precede the data section of {@code manifest}'s safetensors file: length prefix,
     * JSON header and padding. Throws {@link ViperConfigException} when the manifest cannot be
     * written as safetensors (a tensor called {@value #METADATA_KEY}, a header over 100 MB).
     */
    static byte[] encode(Manifest manifest) {
        ByteArrayOutputStream json = new ByteArrayOutputStream(256 + 128 * manifest.tensors().size());
        try (JsonGenerator g = JSON.createGenerator(json, JsonEncoding.UTF8)) {
            g.writeStartObject();
            g.writeObjectFieldStart(METADATA_KEY);
            for (Map.Entry<String, String> e : manifest.metadata().entrySet()) {
                g.writeStringField(e.getKey(), e.getValue());
            }
            g.writeEndObject();
            for (TensorEntry t : manifest.tensors()) {
                TensorInfo i = t.info();
                if (METADATA_KEY.equals(i.name())) {
                    throw new ViperConfigException("manifest " + manifest.model() + " v" + manifest.version()
                            + ": a tensor may not be called '" + METADATA_KEY + "' in a safetensors file");
                }
                g.writeObjectFieldStart(i.name());
                g.writeStringField("dtype", i.dtype().safetensorsName());
                g.writeArrayFieldStart("shape");
                for (long d : i.shape()) {
                    g.writeNumber(d);
                }
                g.writeEndArray();
                g.writeArrayFieldStart("data_offsets");
                g.writeNumber(i.offset());
                g.writeNumber(i.offset() + i.length());
                g.writeEndArray();
                g.writeEndObject();
            }
            g.writeEndObject();
        } catch (IOException e) {
            throw new ViperException(ViperException.Reason.INTERNAL, "cannot encode the safetensors header of "
                    + manifest.model() + " v" + manifest.version() + ": " + e.getMessage(), e);
        }
        int jsonLength = json.size();
        long padded = (jsonLength + 7L) & ~7L;
        if (padded > MAX_HEADER_BYTES) {
            throw new ViperConfigException("manifest " + manifest.model() + " v" + manifest.version() + ": safetensors header of "
                    + padded + " bytes exceeds the limit of " + MAX_HEADER_BYTES);
        }
        ByteBuffer out = ByteBuffer.allocate(Math.toIntExact(8 + padded)).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(padded);
        out.put(json.toByteArray());
        while (out.hasRemaining()) {
            out.put((byte) ' ');
        }
        return out.array();
    }
}
