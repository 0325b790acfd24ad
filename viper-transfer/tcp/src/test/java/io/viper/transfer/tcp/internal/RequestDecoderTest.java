package io.viper.transfer.tcp.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The request codec alone: frames in, {@link Request}s or one-line refusals out. */
class RequestDecoderTest {
    private final EmbeddedChannel channel = new EmbeddedChannel(new RequestDecoder());

    @AfterEach
    void close() {
        assertFalse(channel.finishAndReleaseAll(), "no message left over");
    }

    /** A frame after the length prefix: version, type, then what {@code payload} writes. */
    private static ByteBuf frame(int version, int type, Consumer<ByteBuf> payload) {
        ByteBuf b = Unpooled.buffer().writeByte(version).writeByte(type);
        payload.accept(b);
        return b;
    }

    private static ByteBuf frame(int type, Consumer<ByteBuf> payload) {
        return frame(TcpProtocol.VERSION, type, payload);
    }

    private Request decode(ByteBuf frame) {
        channel.writeInbound(frame);
        Request r = channel.readInbound();
        assertNull(channel.readInbound(), "one request per frame");
        return r;
    }

    private String refusal(ByteBuf frame) {
        return assertThrows(RequestDecoder.MalformedRequestException.class, () -> channel.writeInbound(frame))
                .getMessage();
    }

    private static void lease(ByteBuf b, long version, String model) {
        byte[] m = model.getBytes(StandardCharsets.UTF_8);
        b.writeLong(version).writeShort(m.length).writeBytes(m);
    }

    @Test
    void decodesTheThreeRequests() {
        assertEquals(new Request.Lease("nt3", 7), decode(frame(TcpProtocol.LEASE, b -> lease(b, 7, "nt3"))));
        Request.Read read = (Request.Read) decode(frame(
                TcpProtocol.READ,
                b -> b.writeLong(42)
                        .writeInt(2)
                        .writeLong(0)
                        .writeLong(10)
                        .writeLong(100)
                        .writeLong(0)));
        assertEquals(42, read.leaseId());
        assertArrayEquals(new long[] {0, 100}, read.offsets());
        assertArrayEquals(new long[] {10, 0}, read.lengths());
        assertEquals(new Request.Release(42), decode(frame(TcpProtocol.RELEASE, b -> b.writeLong(42))));
    }

    @Test
    void refusesFramesThatBreakTheProtocol() {
        assertEquals(
                "frame of 1 bytes is shorter than its 2-byte header",
                refusal(Unpooled.buffer().writeByte(1)));
        assertEquals(
                "unsupported protocol version 9 (this server speaks 1)",
                refusal(frame(9, TcpProtocol.LEASE, b -> lease(b, 1, "m"))));
        assertEquals("unexpected frame type LEASED", refusal(frame(TcpProtocol.LEASED, b -> {})));
        assertEquals("unexpected frame type unknown(0x55)", refusal(frame(0x55, b -> {})));
        assertEquals(
                "LEASE frame too short: 3 payload bytes, need at least 10",
                refusal(frame(TcpProtocol.LEASE, b -> b.writeMedium(0))));
        assertEquals(
                "LEASE model name length 5 does not match the 3 bytes left in the frame",
                refusal(frame(
                        TcpProtocol.LEASE, b -> b.writeLong(1).writeShort(5).writeBytes(new byte[] {'a', 'b', 'c'}))));
        assertEquals(
                "LEASE of m with non-positive version 0", refusal(frame(TcpProtocol.LEASE, b -> lease(b, 0, "m"))));
        assertEquals(
                "READ with -1 ranges (allowed 0..65536)",
                refusal(frame(TcpProtocol.READ, b -> b.writeLong(1).writeInt(-1))));
        assertEquals(
                "READ announces 2 ranges but carries 16 bytes of them",
                refusal(frame(
                        TcpProtocol.READ,
                        b -> b.writeLong(1).writeInt(2).writeLong(0).writeLong(1))));
        assertEquals(
                "READ range 0 is negative: -5+1",
                refusal(frame(
                        TcpProtocol.READ,
                        b -> b.writeLong(1).writeInt(1).writeLong(-5).writeLong(1))));
        assertEquals(
                "RELEASE frame carries 4 payload bytes, expected 8",
                refusal(frame(TcpProtocol.RELEASE, b -> b.writeInt(1))));
    }

    @ParameterizedTest
    @CsvSource({"../etc", "a b", "''"})
    void refusesModelNamesThatAreNotSafe(String model) {
        String problem = refusal(frame(TcpProtocol.LEASE, b -> lease(b, 1, model)));
        assertEquals("LEASE: ", problem.substring(0, 7), problem);
    }
}
