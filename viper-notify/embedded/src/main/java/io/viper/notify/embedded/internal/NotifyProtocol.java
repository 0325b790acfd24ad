package io.viper.notify.embedded.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.viper.errors.ViperException;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.net.HostPort;
import io.viper.spi.Notifier;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Frames of the embedded broker protocol, shared by broker and client. The protocol is documented on
 * {@link io.viper.notify.embedded.EmbeddedNotifierProvider}.
 */
public final class NotifyProtocol {
    public static final byte VERSION = 3;
    public static final int LENGTH_BYTES = 4;
    public static final int HEADER_BYTES = 2;

    // Client -> broker.
    public static final byte HELLO = 0x01;
    public static final byte SUBSCRIBE = 0x02;
    public static final byte UNSUBSCRIBE = 0x03;
    public static final byte PUBLISH = 0x04;
    public static final byte LATEST = 0x05;

    // Broker -> client.
    public static final byte WELCOME = 0x11;
    public static final byte MANIFEST = 0x12;
    public static final byte ACK = 0x13;
    public static final byte ERROR = 0x14;

    /** ACK status: the manifest is the broker's latest for its model and was delivered to subscribers. */
    public static final byte ACCEPTED = 0;
    /** ACK status: the broker holds a newer version of the model; the publish was refused. */
    public static final byte STALE = 1;
    /** ACK status: the answer to LATEST; the version is the newest the broker accepted (0: none). */
    public static final byte KNOWN = 2;

    /** ERROR code: the manifest did not decode. */
    public static final byte ERR_FORMAT = 1;
    /** ERROR code: a broker limit was reached. */
    public static final byte ERR_LIMIT = 2;
    /** ERROR code: the frame broke the protocol; the broker closes the connection. */
    public static final byte ERR_PROTOCOL = 3;
    /** ERROR code: the connection's credentials do not allow the request (a consumer token cannot publish). */
    public static final byte ERR_FORBIDDEN = 4;

    /** Room for the header fields around a manifest: version, type, request id and model name. */
    public static final int MAX_OVERHEAD = 1024;
    /** Largest frame (after the length prefix) either side accepts. */
    public static final int MAX_FRAME = ManifestCodec.MAX_ENCODED_BYTES + Notifier.MAX_INLINE_BYTES + MAX_OVERHEAD;
    /** Longest reason text in ERROR frames, in characters. */
    public static final int MAX_REASON_CHARS = 1000;

    private NotifyProtocol() {}

    /** A decoder that cuts the stream into frames (length prefix stripped), refusing oversized ones. */
    public static LengthFieldBasedFrameDecoder frameDecoder() {
        return frameDecoder(MAX_FRAME);
    }

    /**
     * As {@link #frameDecoder()}, refusing frames longer than {@code maxFrame} (a broker's
     * {@code viper.limits.frame.bytes}).
     */
    public static LengthFieldBasedFrameDecoder frameDecoder(int maxFrame) {
        return new LengthFieldBasedFrameDecoder(LENGTH_BYTES + maxFrame, 0, LENGTH_BYTES, 0, LENGTH_BYTES);
    }

    public static String typeName(int type) {
        return switch ((byte) type) {
            case HELLO -> "HELLO";
            case SUBSCRIBE -> "SUBSCRIBE";
            case UNSUBSCRIBE -> "UNSUBSCRIBE";
            case PUBLISH -> "PUBLISH";
            case LATEST -> "LATEST";
            case WELCOME -> "WELCOME";
            case MANIFEST -> "MANIFEST";
            case ACK -> "ACK";
            case ERROR -> "ERROR";
            default -> String.format(Locale.ROOT, "unknown(0x%02x)", type & 0xff);
        };
    }

    /** A frame with only a header. */
    public static ByteBuf empty(ByteBufAllocator alloc, byte type) {
        return header(alloc, type, 0, 0);
    }

    /** Allocates a frame of {@code payload} bytes, with room for them, and writes its header. */
    public static ByteBuf header(ByteBufAllocator alloc, byte type, int payload, int capacityExtra) {
        ByteBuf b = alloc.buffer(LENGTH_BYTES + HEADER_BYTES + capacityExtra);
        b.writeInt(HEADER_BYTES + payload).writeByte(VERSION).writeByte(type);
        return b;
    }

    /** SUBSCRIBE or UNSUBSCRIBE of {@code model}. */
    public static ByteBuf modelFrame(ByteBufAllocator alloc, byte type, String model) {
        byte[] m = model.getBytes(StandardCharsets.UTF_8);
        ByteBuf b = header(alloc, type, 2 + m.length, 2 + m.length);
        return b.writeShort(m.length).writeBytes(m);
    }

    /** WELCOME: how long the broker lets a connection stay silent, so that the client sends HELLO more often. */
    public static ByteBuf welcome(ByteBufAllocator alloc, long idleMs) {
        return header(alloc, WELCOME, 8, 8).writeLong(idleMs);
    }

    /** LATEST: request id, model. */
    public static ByteBuf latest(ByteBufAllocator alloc, long requestId, String model) {
        byte[] m = model.getBytes(StandardCharsets.UTF_8);
        ByteBuf b = header(alloc, LATEST, 8 + 2 + m.length, 8 + 2 + m.length);
        return b.writeLong(requestId).writeShort(m.length).writeBytes(m);
    }

    /**
     * PUBLISH: request id, model, the encoded manifest's length and the manifest, then the version's bytes if any
     * (wrapped, not copied).
     */
    public static ByteBuf publish(ByteBufAllocator alloc, long requestId, String model, Announcement a) {
        byte[] m = model.getBytes(StandardCharsets.UTF_8);
        int head = 8 + 2 + m.length + 4;
        ByteBuf b = header(alloc, PUBLISH, head + a.manifest().length + a.data().length, head);
        b.writeLong(requestId).writeShort(m.length).writeBytes(m).writeInt(a.manifest().length);
        return withBody(b, a);
    }

    /**
     * MANIFEST: model, the encoded manifest's length and the manifest, then the version's bytes if any (wrapped, not
     * copied).
     */
    public static ByteBuf manifest(ByteBufAllocator alloc, String model, Announcement a) {
        byte[] m = model.getBytes(StandardCharsets.UTF_8);
        int head = 2 + m.length + 4;
        ByteBuf b = header(alloc, MANIFEST, head + a.manifest().length + a.data().length, head);
        b.writeShort(m.length).writeBytes(m).writeInt(a.manifest().length);
        return withBody(b, a);
    }

    private static ByteBuf withBody(ByteBuf head, Announcement a) {
        return a.data().length == 0
                ? Unpooled.wrappedBuffer(head, Unpooled.wrappedBuffer(a.manifest()))
                : Unpooled.wrappedBuffer(head, Unpooled.wrappedBuffer(a.manifest()), Unpooled.wrappedBuffer(a.data()));
    }

    /**
     * Reads what {@link #publish} and {@link #manifest} write after the model name: the manifest and the bytes, copied.
     */
    public static Announcement readAnnouncement(ByteBuf f, String what) throws ProtocolException {
        need(f, 4, what);
        int n = f.readInt();
        if (n < 0 || n > f.readableBytes()) {
            throw new ProtocolException(
                    what + ": manifest of " + n + " bytes in a frame with " + f.readableBytes() + " left");
        }
        int dataBytes = f.readableBytes() - n;
        if (dataBytes > Notifier.MAX_INLINE_BYTES) {
            throw new ProtocolException(what + ": " + dataBytes + " bytes of version data, more than the "
                    + Notifier.MAX_INLINE_BYTES + " an announcement may carry");
        }
        byte[] manifest = new byte[n];
        f.readBytes(manifest);
        byte[] data = dataBytes == 0 ? Announcement.NO_DATA : new byte[dataBytes];
        f.readBytes(data);
        return new Announcement(manifest, data);
    }

    public static ByteBuf ack(ByteBufAllocator alloc, long requestId, byte status, long latestVersion) {
        return header(alloc, ACK, 17, 17).writeLong(requestId).writeByte(status).writeLong(latestVersion);
    }

    public static ByteBuf error(ByteBufAllocator alloc, long requestId, byte code, String reason) {
        String cut = reason.length() > MAX_REASON_CHARS ? reason.substring(0, MAX_REASON_CHARS) : reason;
        byte[] r = cut.getBytes(StandardCharsets.UTF_8);
        ByteBuf b = header(alloc, ERROR, 8 + 1 + 2 + r.length, 8 + 1 + 2 + r.length);
        return b.writeLong(requestId).writeByte(code).writeShort(r.length).writeBytes(r);
    }

    /** A malformed frame: the receiving side closes the connection with this message. */
    public static final class ProtocolException extends Exception {
        private static final long serialVersionUID = 1L;

        public ProtocolException(String message) {
            super(message, null, false, false);
        }
    }

    /** Reads the version and type of a frame (length prefix already stripped); returns the type. */
    public static byte readHeader(ByteBuf f) throws ProtocolException {
        if (f.readableBytes() < HEADER_BYTES) {
            throw new ProtocolException("frame of " + f.readableBytes() + " bytes is shorter than its 2-byte header");
        }
        byte version = f.readByte();
        if (version != VERSION) {
            throw new ProtocolException(
                    "unsupported protocol version " + (version & 0xff) + " (this side speaks " + VERSION + ")");
        }
        return f.readByte();
    }

    /** Reads a 2-byte-length UTF-8 model name and checks it. */
    public static String readModel(ByteBuf f, String what) throws ProtocolException {
        need(f, 2, what);
        int n = f.readUnsignedShort();
        need(f, n, what);
        String model = f.readCharSequence(n, StandardCharsets.UTF_8).toString();
        try {
            return Manifest.validateModelName(model);
        } catch (ViperException e) {
            throw new ProtocolException(what + ": " + e.getMessage());
        }
    }

    public static String readReason(ByteBuf f, String what) throws ProtocolException {
        need(f, 2, what);
        int n = f.readUnsignedShort();
        need(f, n, what);
        return f.readCharSequence(n, StandardCharsets.UTF_8).toString();
    }

    public static void need(ByteBuf f, int n, String what) throws ProtocolException {
        if (f.readableBytes() < n) {
            throw new ProtocolException(what + " frame too short: " + f.readableBytes() + " bytes left, need " + n);
        }
    }

    public static void end(ByteBuf f, String what) throws ProtocolException {
        if (f.isReadable()) {
            throw new ProtocolException(what + " frame has " + f.readableBytes() + " unexpected trailing bytes");
        }
    }

    /** Host and port of an {@code embedded://host:port} URI; port 0 only where {@code allowZeroPort}. */
    public record Endpoint(String host, int port) {
        public static Endpoint parse(URI uri, boolean allowZeroPort) {
            HostPort address = HostPort.parse(uri, "embedded", allowZeroPort);
            return new Endpoint(address.host(), address.port());
        }

        public URI uri() {
            return uri(host, port);
        }

        /** {@code embedded://host:port}; a wildcard host is replaced by this host's address. */
        public static URI uri(String host, int port) {
            return new HostPort(host, port).advertised().uri("embedded");
        }

        @Override
        public String toString() {
            return "embedded://" + new HostPort(host, port);
        }
    }
}
