package io.viper.notify.embedded.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The embedded protocol's codec alone: frames written by {@link NotifyProtocol}'s encoders go through the frame decoder
 * and {@link NotifyDecoder} as on a real connection.
 */
class NotifyDecoderTest {
    private static final ByteBufAllocator ALLOC = ByteBufAllocator.DEFAULT;
    private static final byte[] MANIFEST = "{\"manifest\":1}".getBytes(StandardCharsets.UTF_8);

    private final EmbeddedChannel broker =
            new EmbeddedChannel(NotifyProtocol.frameDecoder(), NotifyDecoder.fromClients());
    private final EmbeddedChannel client =
            new EmbeddedChannel(NotifyProtocol.frameDecoder(), NotifyDecoder.fromBroker());

    @AfterEach
    void close() {
        assertFalse(broker.finishAndReleaseAll(), "no message left over");
        assertFalse(client.finishAndReleaseAll(), "no message left over");
    }

    private static NotifyMessage decode(EmbeddedChannel side, ByteBuf wire) {
        side.writeInbound(wire);
        NotifyMessage m = side.readInbound();
        assertNull(side.readInbound(), "one message per frame");
        return m;
    }

    private static String refusal(EmbeddedChannel side, ByteBuf wire) {
        return assertThrows(NotifyDecoder.MalformedFrameException.class, () -> side.writeInbound(wire))
                .getMessage();
    }

    @Test
    void theBrokerReadsWhatClientsSend() {
        assertInstanceOf(NotifyMessage.Hello.class, decode(broker, NotifyProtocol.empty(ALLOC, NotifyProtocol.HELLO)));
        assertEquals(
                new NotifyMessage.Subscribe("nt3"),
                decode(broker, NotifyProtocol.modelFrame(ALLOC, NotifyProtocol.SUBSCRIBE, "nt3")));
        assertEquals(
                new NotifyMessage.Unsubscribe("nt3"),
                decode(broker, NotifyProtocol.modelFrame(ALLOC, NotifyProtocol.UNSUBSCRIBE, "nt3")));
        NotifyMessage.Publish p = (NotifyMessage.Publish)
                decode(broker, NotifyProtocol.publish(ALLOC, 77, "nt3", Announcement.of(MANIFEST)));
        assertEquals(77, p.requestId());
        assertEquals("nt3", p.model());
        assertArrayEquals(MANIFEST, p.announcement().manifest());
        assertEquals(0, p.announcement().data().length);
        byte[] data = {1, 2, 3, 4, 5};
        NotifyMessage.Publish withData = (NotifyMessage.Publish)
                decode(broker, NotifyProtocol.publish(ALLOC, 78, "nt3", new Announcement(MANIFEST, data)));
        assertArrayEquals(MANIFEST, withData.announcement().manifest());
        assertArrayEquals(data, withData.announcement().data());
    }

    @Test
    void aClientReadsWhatTheBrokerSends() {
        assertEquals(new NotifyMessage.Welcome(120_000), decode(client, NotifyProtocol.welcome(ALLOC, 120_000)));
        assertEquals(
                "WELCOME frame too short: 0 bytes left, need 8",
                refusal(client, NotifyProtocol.empty(ALLOC, NotifyProtocol.WELCOME)));
        assertEquals(new NotifyMessage.Latest(9, "nt3"), decode(broker, NotifyProtocol.latest(ALLOC, 9, "nt3")));
        NotifyMessage.Manifest m = (NotifyMessage.Manifest)
                decode(client, NotifyProtocol.manifest(ALLOC, "nt3", Announcement.of(MANIFEST)));
        assertEquals("nt3", m.model());
        assertArrayEquals(MANIFEST, m.announcement().manifest());
        byte[] data = {9, 8, 7};
        NotifyMessage.Manifest withData = (NotifyMessage.Manifest)
                decode(client, NotifyProtocol.manifest(ALLOC, "nt3", new Announcement(MANIFEST, data)));
        assertArrayEquals(MANIFEST, withData.announcement().manifest());
        assertArrayEquals(data, withData.announcement().data());
        assertEquals(
                new NotifyMessage.Ack(77, NotifyProtocol.STALE, 5),
                decode(client, NotifyProtocol.ack(ALLOC, 77, NotifyProtocol.STALE, 5)));
        assertEquals(
                new NotifyMessage.Error(77, NotifyProtocol.ERR_LIMIT, "full"),
                decode(client, NotifyProtocol.error(ALLOC, 77, NotifyProtocol.ERR_LIMIT, "full")));
    }

    @Test
    void eachSideRefusesTheOtherSidesFrames() {
        assertEquals("unexpected frame type WELCOME", refusal(broker, NotifyProtocol.welcome(ALLOC, 1)));
        assertEquals(
                "unexpected frame type PUBLISH",
                refusal(client, NotifyProtocol.publish(ALLOC, 1, "nt3", Announcement.of(MANIFEST))));
    }

    @Test
    void malformedFramesAreRefusedWithOneLine() {
        ByteBuf badVersion = Unpooled.buffer().writeInt(2).writeByte(7).writeByte(NotifyProtocol.HELLO);
        assertEquals("unsupported protocol version 7 (this side speaks 3)", refusal(broker, badVersion));
        ByteBuf trailing = Unpooled.buffer()
                .writeInt(3)
                .writeByte(NotifyProtocol.VERSION)
                .writeByte(NotifyProtocol.HELLO)
                .writeByte(0);
        assertEquals("HELLO frame has 1 unexpected trailing bytes", refusal(broker, trailing));
        String badName = refusal(broker, NotifyProtocol.modelFrame(ALLOC, NotifyProtocol.SUBSCRIBE, "../etc"));
        assertTrue(badName.startsWith("SUBSCRIBE: invalid model name '../etc'"), badName);
        ByteBuf shortAck = Unpooled.buffer()
                .writeInt(6)
                .writeByte(NotifyProtocol.VERSION)
                .writeByte(NotifyProtocol.ACK)
                .writeInt(0);
        assertEquals("ACK frame too short: 4 bytes left, need 17", refusal(client, shortAck));
        // a manifest length beyond the frame, and more version bytes than an announcement may carry
        ByteBuf overlong = Unpooled.buffer()
                .writeInt(2 + 2 + 3 + 4 + 2)
                .writeByte(NotifyProtocol.VERSION)
                .writeByte(NotifyProtocol.MANIFEST)
                .writeShort(3)
                .writeBytes("nt3".getBytes(StandardCharsets.UTF_8))
                .writeInt(100)
                .writeShort(0);
        assertEquals("MANIFEST: manifest of 100 bytes in a frame with 2 left", refusal(client, overlong));
        int tooMuch = io.viper.spi.Notifier.MAX_INLINE_BYTES + 1;
        ByteBuf bulky = Unpooled.buffer()
                .writeInt(2 + 2 + 3 + 4 + tooMuch)
                .writeByte(NotifyProtocol.VERSION)
                .writeByte(NotifyProtocol.MANIFEST)
                .writeShort(3)
                .writeBytes("nt3".getBytes(StandardCharsets.UTF_8))
                .writeInt(0)
                .writeZero(tooMuch);
        assertEquals(
                "MANIFEST: " + tooMuch + " bytes of version data, more than the "
                        + io.viper.spi.Notifier.MAX_INLINE_BYTES + " an announcement may carry",
                refusal(client, bulky));
    }
}
