package io.viper.agent.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.agent.AgentProtocol;
import io.viper.errors.ViperFormatException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * The agent's framing: a 4-byte big-endian length, then that many bytes of one UTF-8 JSON object. Reading refuses,
 * before allocating anything, a length of 0 or above {@link AgentProtocol#MAX_FRAME_BYTES}; it refuses a body that is
 * not one JSON object and a frame the peer cut short. Stateless: each call works on the channel it is given, from one
 * thread.
 */
final class Frames {
    /** Bytes of the length that starts every frame. */
    static final int LENGTH_BYTES = 4;
    /**
     * Also reads the bare NaN and Infinity that Python's json writes: a value the agent can parse is one it can name in
     * an error reply for that request, with the connection kept (a field that must be an integer refuses it;
     * {@link Request#optionalDouble} takes it).
     */
    static final ObjectMapper JSON = JsonMapper.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    private Frames() {}

    /**
     * Reads one frame from {@code channel} (blocking).
     *
     * @param peer names the client in error messages
     * @return the message, or null when the peer closed the connection between frames
     * @throws ViperFormatException for a length out of bounds, a truncated frame or a body that is not a JSON object
     * @throws IOException when the connection fails
     */
    static ObjectNode read(ReadableByteChannel channel, String peer) throws IOException {
        ByteBuffer length = ByteBuffer.allocate(LENGTH_BYTES);
        int got = fill(channel, length);
        if (got == 0) {
            return null;
        }
        if (length.hasRemaining()) {
            throw new ViperFormatException(
                    peer,
                    "truncated frame: the connection closed after " + got + " of the " + LENGTH_BYTES
                            + " length bytes");
        }
        long n = Integer.toUnsignedLong(length.getInt(0));
        if (n == 0 || n > AgentProtocol.MAX_FRAME_BYTES) {
            throw new ViperFormatException(
                    peer,
                    "frame length " + n + " is outside 1.." + AgentProtocol.MAX_FRAME_BYTES + " (bytes 0x"
                            + String.format("%08x", length.getInt(0)) + "; not a client of the viper agent protocol?)");
        }
        ByteBuffer body = ByteBuffer.allocate((int) n);
        int read = fill(channel, body);
        if (body.hasRemaining()) {
            throw new ViperFormatException(
                    peer, "truncated frame: the connection closed after " + read + " of " + n + " bytes");
        }
        return parse(body.array(), peer);
    }

    /** The frame carrying {@code message}: length and UTF-8 JSON, ready to write. */
    static ByteBuffer encode(ObjectNode message) {
        byte[] body;
        try {
            body = JSON.writeValueAsBytes(message);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a JSON tree always serialises", e);
        }
        if (body.length > AgentProtocol.MAX_FRAME_BYTES) {
            throw new IllegalArgumentException("message of " + body.length + " bytes exceeds the frame limit");
        }
        ByteBuffer frame = ByteBuffer.allocate(LENGTH_BYTES + body.length);
        frame.putInt(body.length).put(body).flip();
        return frame;
    }

    /** A new, empty message. */
    static ObjectNode message() {
        return JSON.createObjectNode();
    }

    static ObjectNode parse(byte[] body, String peer) {
        JsonNode node;
        try {
            node = JSON.readTree(body);
        } catch (IOException e) {
            String problem = e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
            throw new ViperFormatException(
                    peer,
                    "frame is not JSON: "
                            + (problem == null
                                    ? "unreadable"
                                    : problem.lines().findFirst().orElse("")));
        }
        if (!(node instanceof ObjectNode o)) {
            throw new ViperFormatException(
                    peer,
                    "frame is not a JSON object but "
                            + (node == null
                                    ? "empty"
                                    : node.getNodeType().name().toLowerCase(Locale.ROOT)) + " ("
                            + abbreviate(new String(body, StandardCharsets.UTF_8)) + ")");
        }
        return o;
    }

    /** Reads until {@code dst} is full or the stream ends; returns the bytes read. */
    private static int fill(ReadableByteChannel channel, ByteBuffer dst) throws IOException {
        int total = 0;
        while (dst.hasRemaining()) {
            int n = channel.read(dst);
            if (n < 0) {
                break;
            }
            total += n;
        }
        return total;
    }

    private static String abbreviate(String s) {
        String one = s.replaceAll("\\s+", " ");
        return one.length() <= 40 ? one : one.substring(0, 40) + "...";
    }
}
