package io.viper.transfer.tcp.internal;

import io.viper.net.HostPort;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Constants and small helpers of the {@code tcp://} wire protocol, shared by server and client. The protocol itself is
 * documented on {@link io.viper.transfer.tcp.TcpTransportProvider}.
 */
public final class TcpProtocol {
    /** Protocol version carried in every frame. */
    public static final byte VERSION = 1;

    /** Bytes of the length prefix. */
    public static final int LENGTH_BYTES = 4;
    /** Bytes after the length prefix that every frame has: version and type. */
    public static final int HEADER_BYTES = 2;

    // Client -> server.
    public static final byte LEASE = 0x01;
    public static final byte READ = 0x02;
    public static final byte RELEASE = 0x03;
    public static final byte TRACK = 0x04;

    // Server -> client.
    public static final byte LEASED = 0x11;
    public static final byte NOT_AVAILABLE = 0x12;
    public static final byte DATA = 0x13;
    public static final byte RELEASED = 0x14;
    public static final byte SOURCES = 0x15;
    public static final byte ERROR = 0x1F;

    /**
     * The lease id a READ or RELEASE gives to mean the lease taken by the connection's last LEASE, so that a client
     * sends all three in one write (server ids start at 1).
     */
    public static final long LAST_LEASE = 0;

    /** Ranges one READ frame may carry; the client splits longer lists. */
    public static final int MAX_RANGES_PER_READ = 65_536;
    /** Largest frame (after the length prefix) the server accepts: a READ with the most ranges. */
    public static final int MAX_REQUEST_FRAME = HEADER_BYTES + 8 + 4 + MAX_RANGES_PER_READ * 16;
    /** Largest frame (after the length prefix) the client accepts from the server. */
    public static final int MAX_RESPONSE_FRAME = 64 * 1024;
    /** Longest reason text sent in NOT_AVAILABLE and ERROR frames, in characters. */
    public static final int MAX_REASON_CHARS = 1000;
    /** Leases one connection may hold at once. */
    public static final int MAX_LEASES_PER_CONNECTION = 1024;

    /** Locations one TRACK or SOURCES frame may carry per list. */
    public static final int MAX_TRACK_URIS = 16;
    /** Longest location a TRACK or SOURCES frame carries, in bytes. */
    public static final int MAX_URI_BYTES = 512;

    /** Bytes per zero-copy slice of staged memory the server writes. */
    public static final int CHUNK_BYTES = 8 * 1024 * 1024;

    private TcpProtocol() {}

    /** The name of a frame type, for log and error messages. */
    public static String typeName(int type) {
        return switch ((byte) type) {
            case LEASE -> "LEASE";
            case READ -> "READ";
            case RELEASE -> "RELEASE";
            case TRACK -> "TRACK";
            case SOURCES -> "SOURCES";
            case LEASED -> "LEASED";
            case NOT_AVAILABLE -> "NOT_AVAILABLE";
            case DATA -> "DATA";
            case RELEASED -> "RELEASED";
            case ERROR -> "ERROR";
            default -> String.format(Locale.ROOT, "unknown(0x%02x)", type & 0xff);
        };
    }

    /** {@code s} as UTF-8, cut to {@link #MAX_REASON_CHARS}. */
    public static byte[] reasonBytes(String s) {
        String cut = s.length() > MAX_REASON_CHARS ? s.substring(0, MAX_REASON_CHARS) : s;
        return cut.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * A list of locations as TRACK and SOURCES carry it ({@code n:u8 n*(uri:str)}), what {@link RequestDecoder#uris}
     * reads: at most {@link #MAX_TRACK_URIS}, each at most {@link #MAX_URI_BYTES} long (a longer one is left out).
     */
    public static byte[] uriList(List<URI> uris) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        List<byte[]> texts = new ArrayList<>();
        for (URI u : uris.subList(0, Math.min(uris.size(), MAX_TRACK_URIS))) {
            byte[] b = u.toString().getBytes(StandardCharsets.UTF_8);
            if (b.length <= MAX_URI_BYTES) {
                texts.add(b);
            }
        }
        out.write(texts.size());
        for (byte[] b : texts) {
            out.write(b.length >>> 8);
            out.write(b.length);
            out.writeBytes(b);
        }
        return out.toByteArray();
    }

    /** The URI consumers use to reach {@code bound}; a wildcard address is replaced by this host's address. */
    public static URI locationUri(InetSocketAddress bound) {
        return new HostPort(bound.getAddress().getHostAddress(), bound.getPort())
                .advertised()
                .uri("tcp");
    }
}
