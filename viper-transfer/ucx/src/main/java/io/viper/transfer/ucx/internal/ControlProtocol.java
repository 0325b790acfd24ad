package io.viper.transfer.ucx.internal;

import io.viper.errors.ViperConfigException;
import io.viper.manifest.Manifest;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The control-channel protocol of the ucx transport, spoken over plain TCP next to the UCX data path.
 *
 * <p>The consumer opens a connection, both sides run the authentication handshake
 * ({@link io.viper.auth.Handshake}: nothing else crosses before it succeeded), and the consumer writes
 * the 4-byte {@link #MAGIC}; then both sides exchange
 * frames: a big-endian {@code int} length (of what follows, 1 to {@link #MAX_FRAME}), a type byte and
 * the payload. Strings are a {@code u16} length and UTF-8 bytes; byte arrays likewise.
 * <pre>
 *   consumer -&gt; producer  LEASE(model: str, version: i64)
 *   producer -&gt; consumer  GRANT(leaseId: i64, exposureId: i64, address: i64, size: i64, workerAddress: bytes, rkey: bytes)
 *                        | NOT_AVAILABLE(reason: str)
 *   consumer              RDMA GETs from [address, address + size) with rkey, over an endpoint to workerAddress
 *   consumer -&gt; producer  RELEASE(leaseId: i64)
 *   producer -&gt; consumer  RELEASED(leaseId: i64)
 * </pre>
 * {@code exposureId} names one registration of one version, never reused by a producer: consumers
 * may cache what they unpacked from {@code rkey} under it.
 * A connection may carry several leases one after another. When it closes, the producer closes every
 * lease taken on it. Anything malformed closes the connection.
 */
final class ControlProtocol {
    /** "VUC2": Viper UCX control, protocol 2 (after the authentication handshake). */
    static final int MAGIC = 0x56554332;
    static final int MAX_FRAME = 64 * 1024;

    static final byte LEASE = 1;
    static final byte GRANT = 2;
    static final byte NOT_AVAILABLE = 3;
    static final byte RELEASE = 4;
    static final byte RELEASED = 5;

    private ControlProtocol() {
    }

    /** A malformed frame or a frame out of turn; the connection is closed. */
    static final class ProtocolException extends Exception {
        ProtocolException(String message) {
            super(message);
        }
    }

    record LeaseRequest(String model, long version) {
    }

    record Grant(long leaseId, long exposureId, long address, long size, byte[] workerAddress, byte[] rkey) {
    }

    static String typeName(byte type) {
        return switch (type) {
            case LEASE -> "LEASE";
            case GRANT -> "GRANT";
            case NOT_AVAILABLE -> "NOT_AVAILABLE";
            case RELEASE -> "RELEASE";
            case RELEASED -> "RELEASED";
            default -> "unknown type " + (type & 0xff);
        };
    }

    static ByteBuffer lease(String model, long version) {
        byte[] m = model.getBytes(StandardCharsets.UTF_8);
        return frame(LEASE, 2 + m.length + 8).putShort((short) m.length).put(m).putLong(version).flip();
    }

    static ByteBuffer grant(long leaseId, long exposureId, long address, long size, byte[] workerAddress, byte[] rkey) {
        if (workerAddress.length > 0xffff || rkey.length > 0xffff) {
            throw new IllegalArgumentException("worker address or rkey longer than 65535 bytes");
        }
        return frame(GRANT, 32 + 2 + workerAddress.length + 2 + rkey.length)
                .putLong(leaseId).putLong(exposureId).putLong(address).putLong(size)
                .putShort((short) workerAddress.length).put(workerAddress)
                .putShort((short) rkey.length).put(rkey).flip();
    }

    static ByteBuffer notAvailable(String reason) {
        byte[] r = reason.getBytes(StandardCharsets.UTF_8);
        if (r.length > 1000) {
            r = java.util.Arrays.copyOf(r, 1000);
            reason = new String(r, StandardCharsets.UTF_8);
            r = reason.getBytes(StandardCharsets.UTF_8);
        }
        return frame(NOT_AVAILABLE, 2 + r.length).putShort((short) r.length).put(r).flip();
    }

    static ByteBuffer release(long leaseId) {
        return frame(RELEASE, 8).putLong(leaseId).flip();
    }

    static ByteBuffer released(long leaseId) {
        return frame(RELEASED, 8).putLong(leaseId).flip();
    }

    private static ByteBuffer frame(byte type, int payload) {
        ByteBuffer b = ByteBuffer.allocate(4 + 1 + payload);
        b.putInt(1 + payload).put(type);
        return b;
    }

    static LeaseRequest parseLease(ByteBuffer p) throws ProtocolException {
        try {
            String model = string(p, "model");
            long version = p.getLong();
            end(p, "LEASE");
            try {
                Manifest.validateModelName(model);
            } catch (ViperConfigException e) {
                throw new ProtocolException("LEASE: " + e.getMessage());
            }
            if (version <= 0) {
                throw new ProtocolException("LEASE: version must be positive, got " + version);
            }
            return new LeaseRequest(model, version);
        } catch (BufferUnderflowException e) {
            throw new ProtocolException("LEASE frame truncated");
        }
    }

    static Grant parseGrant(ByteBuffer p) throws ProtocolException {
        try {
            long leaseId = p.getLong();
            long exposureId = p.getLong();
            long address = p.getLong();
            long size = p.getLong();
            byte[] worker = bytes(p);
            byte[] rkey = bytes(p);
            end(p, "GRANT");
            if (size < 0) {
                throw new ProtocolException("GRANT: negative size " + size);
            }
            if (size > 0 && (worker.length == 0 || rkey.length == 0 || address == 0)) {
                throw new ProtocolException("GRANT: missing worker address, rkey or memory address for " + size + " bytes");
            }
            return new Grant(leaseId, exposureId, address, size, worker, rkey);
        } catch (BufferUnderflowException e) {
            throw new ProtocolException("GRANT frame truncated");
        }
    }

    static String parseNotAvailable(ByteBuffer p) throws ProtocolException {
        try {
            String reason = string(p, "reason");
            end(p, "NOT_AVAILABLE");
            return reason;
        } catch (BufferUnderflowException e) {
            throw new ProtocolException("NOT_AVAILABLE frame truncated");
        }
    }

    /** RELEASE and RELEASED carry one lease id. */
    static long parseLeaseId(ByteBuffer p, String what) throws ProtocolException {
        try {
            long id = p.getLong();
            end(p, what);
            return id;
        } catch (BufferUnderflowException e) {
            throw new ProtocolException(what + " frame truncated");
        }
    }

    private static byte[] bytes(ByteBuffer p) {
        int n = Short.toUnsignedInt(p.getShort());
        byte[] b = new byte[n];
        p.get(b);
        return b;
    }

    private static String string(ByteBuffer p, String what) throws ProtocolException {
        byte[] b = bytes(p);
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            throw new ProtocolException(what + " is not valid UTF-8");
        }
    }

    private static void end(ByteBuffer p, String what) throws ProtocolException {
        if (p.hasRemaining()) {
            throw new ProtocolException(what + " frame has " + p.remaining() + " trailing bytes");
        }
    }
}
