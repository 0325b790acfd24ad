package io.viper.agent.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.agent.AgentProtocol;
import io.viper.errors.ViperFormatException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The agent's framing: what it reads, and what it refuses, each with one line naming the problem. */
class FramesTest {
    private static ReadableByteChannel bytes(byte[] b) {
        return Channels.newChannel(new ByteArrayInputStream(b));
    }

    private static byte[] frame(int length, String body) {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(4 + b.length).putInt(length).put(b).array();
    }

    @Test
    void aMessageSurvivesEncodeAndRead() throws IOException {
        ObjectNode m = Frames.message().put("op", "hello").put("protocol", 1).put("model", "nt3");
        ByteBuffer f = Frames.encode(m);
        assertEquals(f.remaining() - 4, f.getInt(0), "a 4-byte big-endian length, then the body");
        byte[] all = new byte[f.remaining()];
        f.get(all);
        assertEquals(m, Frames.read(bytes(all), "c"));
    }

    @Test
    void theEndOfTheStreamBetweenFramesIsNoFrame() throws IOException {
        assertNull(Frames.read(bytes(new byte[0]), "c"));
    }

    @Test
    void lengthsOutOfBoundsAreRefusedBeforeAnythingIsAllocated() {
        ViperFormatException zero =
                assertThrows(ViperFormatException.class, () -> Frames.read(bytes(frame(0, "")), "client 1"));
        assertEquals(
                "client 1: frame length 0 is outside 1.." + AgentProtocol.MAX_FRAME_BYTES
                        + " (bytes 0x00000000; not a client of the viper agent protocol?)",
                zero.getMessage());
        // An HTTP request read as a frame: "GET " is a length of about 1.2 GB.
        ViperFormatException http = assertThrows(
                ViperFormatException.class,
                () -> Frames.read(bytes("GET / HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII)), "c"));
        assertTrue(http.getMessage().startsWith("c: frame length 1195725856 is outside"), http.getMessage());
        assertThrows(
                ViperFormatException.class,
                () -> Frames.read(bytes(frame(-1, "")), "c"),
                "0xffffffff is 4 GiB, not -1");
    }

    @Test
    void aTruncatedFrameIsRefusedSayingHowMuchArrived() {
        ViperFormatException body =
                assertThrows(ViperFormatException.class, () -> Frames.read(bytes(frame(100, "{\"op\":")), "c"));
        assertEquals("c: truncated frame: the connection closed after 6 of 100 bytes", body.getMessage());
        ViperFormatException length =
                assertThrows(ViperFormatException.class, () -> Frames.read(bytes(new byte[] {0, 0}), "c"));
        assertEquals("c: truncated frame: the connection closed after 2 of the 4 length bytes", length.getMessage());
    }

    @Test
    void aBodyThatIsNotOneJsonObjectIsRefused() {
        String[] bodies = {"not json", "[1,2]", "{\"op\":\"ping\"} trailing", "{\"op\":1,\"op\":2}", "\"text\""};
        for (String b : bodies) {
            ViperFormatException e = assertThrows(
                    ViperFormatException.class,
                    () -> Frames.read(bytes(frame(b.getBytes(StandardCharsets.UTF_8).length, b)), "c"),
                    b);
            assertTrue(e.getMessage().startsWith("c: frame is not "), b + " -> " + e.getMessage());
            assertEquals(-1, e.getMessage().indexOf('\n'), "one line: " + e.getMessage());
        }
    }
}
