package io.viper.transfer.tcp.internal;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.MessageToMessageDecoder;
import io.viper.errors.ViperException;
import io.viper.manifest.Manifest;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns one frame of the {@code tcp://} protocol (length prefix already stripped by the frame decoder ahead of it) into
 * a {@link Request} for {@link ServerConnection}. A frame that breaks the protocol raises a
 * {@link MalformedRequestException} naming the problem; the connection handler closes the connection with that message.
 * One instance per connection, on its event loop.
 */
final class RequestDecoder extends MessageToMessageDecoder<ByteBuf> {

    /** A frame that is not a well-formed request; its message is the one-line reason. */
    static final class MalformedRequestException extends CorruptedFrameException {
        private static final long serialVersionUID = 1L;

        MalformedRequestException(String message) {
            super(message);
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this; // a peer's mistake, not ours: the message says it all
        }
    }

    RequestDecoder() {
        super(ByteBuf.class);
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf frame, List<Object> out) {
        out.add(decode(frame));
    }

    static Request decode(ByteBuf f) {
        int size = f.readableBytes();
        if (size < TcpProtocol.HEADER_BYTES) {
            throw new MalformedRequestException("frame of " + size + " bytes is shorter than its 2-byte header");
        }
        byte version = f.readByte();
        if (version != TcpProtocol.VERSION) {
            throw new MalformedRequestException("unsupported protocol version " + (version & 0xff)
                    + " (this server speaks " + TcpProtocol.VERSION + ")");
        }
        byte type = f.readByte();
        return switch (type) {
            case TcpProtocol.LEASE -> lease(f);
            case TcpProtocol.READ -> read(f);
            case TcpProtocol.TRACK -> track(f);
            case TcpProtocol.RELEASE -> {
                if (f.readableBytes() != 8) {
                    throw new MalformedRequestException(
                            "RELEASE frame carries " + f.readableBytes() + " payload bytes, expected 8");
                }
                yield new Request.Release(f.readLong());
            }
            default -> throw new MalformedRequestException("unexpected frame type " + TcpProtocol.typeName(type));
        };
    }

    private static Request.Lease lease(ByteBuf f) {
        need(f, 10, "LEASE");
        long v = f.readLong();
        int n = f.readUnsignedShort();
        if (f.readableBytes() != n) {
            throw new MalformedRequestException("LEASE model name length " + n + " does not match the "
                    + f.readableBytes() + " bytes left in the frame");
        }
        String model = modelName(f, n, v, "LEASE");
        return new Request.Lease(model, v);
    }

    private static String modelName(ByteBuf f, int n, long v, String what) {
        String model = f.readCharSequence(n, StandardCharsets.UTF_8).toString();
        try {
            Manifest.validateModelName(model);
        } catch (ViperException e) {
            throw new MalformedRequestException(what + ": " + e.getMessage());
        }
        if (v <= 0) {
            throw new MalformedRequestException(what + " of " + model + " with non-positive version " + v);
        }
        return model;
    }

    private static Request.Track track(ByteBuf f) {
        need(f, 12, "TRACK");
        long v = f.readLong();
        int n = f.readUnsignedShort();
        if (f.readableBytes() < n + 2) {
            throw new MalformedRequestException("TRACK model name length " + n + " leaves no room for its lists");
        }
        String model = modelName(f, n, v, "TRACK");
        List<URI> relay = uris(f, "TRACK relay");
        List<URI> failed = uris(f, "TRACK failed");
        if (f.isReadable()) {
            throw new MalformedRequestException("TRACK frame has " + f.readableBytes() + " bytes after its lists");
        }
        return new Request.Track(model, v, relay, failed);
    }

    /** A list of locations: a count byte, then each as a string; each an absolute URI with a host and a port. */
    static List<URI> uris(ByteBuf f, String what) {
        if (!f.isReadable()) {
            throw new MalformedRequestException(what + ": missing count");
        }
        int count = f.readUnsignedByte();
        if (count > TcpProtocol.MAX_TRACK_URIS) {
            throw new MalformedRequestException(
                    what + ": " + count + " locations (at most " + TcpProtocol.MAX_TRACK_URIS + ")");
        }
        List<URI> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            if (f.readableBytes() < 2) {
                throw new MalformedRequestException(what + ": location " + i + " is cut short");
            }
            int len = f.readUnsignedShort();
            if (len > TcpProtocol.MAX_URI_BYTES || f.readableBytes() < len) {
                throw new MalformedRequestException(what + ": location " + i + " of " + len + " bytes");
            }
            String text = f.readCharSequence(len, StandardCharsets.UTF_8).toString();
            try {
                URI u = new URI(text);
                if (u.getScheme() == null || u.getHost() == null || u.getPort() <= 0) {
                    throw new URISyntaxException(text, "not scheme://host:port");
                }
                out.add(u);
            } catch (URISyntaxException e) {
                throw new MalformedRequestException(what + ": location " + i + ": " + e.getMessage());
            }
        }
        return out;
    }

    private static Request.Read read(ByteBuf f) {
        need(f, 12, "READ");
        long id = f.readLong();
        int count = f.readInt();
        if (count < 0 || count > TcpProtocol.MAX_RANGES_PER_READ) {
            throw new MalformedRequestException(
                    "READ with " + count + " ranges (allowed 0.." + TcpProtocol.MAX_RANGES_PER_READ + ")");
        }
        if (f.readableBytes() != count * 16) {
            throw new MalformedRequestException(
                    "READ announces " + count + " ranges but carries " + f.readableBytes() + " bytes of them");
        }
        long[] offsets = new long[count];
        long[] lengths = new long[count];
        for (int i = 0; i < count; i++) {
            offsets[i] = f.readLong();
            lengths[i] = f.readLong();
            if (offsets[i] < 0 || lengths[i] < 0) {
                throw new MalformedRequestException(
                        "READ range " + i + " is negative: " + offsets[i] + "+" + lengths[i]);
            }
        }
        return new Request.Read(id, offsets, lengths);
    }

    private static void need(ByteBuf f, int n, String what) {
        if (f.readableBytes() < n) {
            throw new MalformedRequestException(
                    what + " frame too short: " + f.readableBytes() + " payload bytes, need at least " + n);
        }
    }
}
