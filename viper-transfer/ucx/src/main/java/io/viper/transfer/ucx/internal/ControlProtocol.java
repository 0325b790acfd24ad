package io.viper.transfer.ucx.internal;

import io.viper.errors.ViperConfigException;
import io.viper.manifest.Manifest;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The control-channel protocol of the ucx transport, spoken over plain TCP next to the UCX data path.
 *
 * <p>The consumer opens a connection, both sides run the authentication handshake ({@link io.viper.auth.Handshake}:
 * nothing else crosses before it succeeded), and the consumer writes the 4-byte {@link #MAGIC}; then both sides
 * exchange frames: a big-endian {@code int} length (of what follows, 1 to {@link #MAX_FRAME}), a type byte and the
 * payload. Strings are a {@code u16} length and UTF-8 bytes; byte arrays likewise.
 *
 * <pre>
 *   consumer -&gt; producer  LEASE(model: str, version: i64)
 *   producer -&gt; consumer  GRANT(leaseId: i64, exposureId: i64, address: i64, size: i64,
 *                               workerAddress: bytes, rkey: bytes)
 *                        | NOT_AVAILABLE(reason: str)
 *   consumer              RDMA GETs from [address, address + size) with rkey, over an endpoint to workerAddress
 *   consumer -&gt; producer  RELEASE(leaseId: i64)
 *   producer -&gt; consumer  RELEASED(leaseId: i64)
 *
 *   consumer -&gt; producer  LEASE_READ(model: str, version: i64, n: i32, n * (offset: i64, length: i64))
 *   producer -&gt; consumer  DATA(size: i64, total: i64) followed by {@code total} raw bytes (not framed):
 *                          the ranges of the version's {@code size} bytes, concatenated in order
 *                        | NOT_AVAILABLE(reason: str)
 * </pre>
 *
 * LEASE_READ is a whole read in one round trip, for small reads ({@link #MAX_INLINE} bytes at most): the producer takes
 * the lease, writes the bytes and closes the lease before it reads the next frame. {@code exposureId} names one
 * registration of one version, never reused by a producer: consumers may cache what they unpacked from {@code rkey}
 * under it. A connection may carry several leases one after another. When it closes, the producer closes every lease
 * taken on it. Anything malformed closes the connection.
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
    static final byte LEASE_READ = 6;
    static final byte DATA = 7;

    /** Most bytes one LEASE_READ may ask for. */
    static final long MAX_INLINE = 1L << 20;
    /** Most ranges one LEASE_READ may carry (its frame stays under {@link #MAX_FRAME}). */
    static final int MAX_INLINE_RANGES = 1024;

    private ControlProtocol() {}

    /** A malformed frame or a frame out of turn; the connection is closed. */
    static final class ProtocolException extends Exception {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message);
        }
    }

    record LeaseRequest(String model, long version) {}

    record LeaseReadRequest(String model, long version, long[] offsets, long[] lengths) {
        long total() {
            long t = 0;
            for (long l : lengths) {
                t += l;
            }
            return t;
        }
    }

    record Grant(long leaseId, long exposureId, long address, long size, byte[] workerAddress, byte[] rkey) {}

    static String typeName(byte type) {
        return switch (type) {
            case LEASE -> "LEASE";
            case GRANT -> "GRANT";
            case NOT_AVAILABLE -> "NOT_AVAILABLE";
            case RELEASE -> "RELEASE";
            case RELEASED -> "RELEASED";
            case LEASE_READ -> "LEASE_READ";
            case DATA -> "DATA";
            default -> "unknown type " + (type & 0xff);
        };
    }

    static ByteBuffer lease(String model, long version) {
        byte[] m = model.getBytes(StandardCharsets.UTF_8);
        return frame(LEASE, 2 + m.length + 8)
                .putShort((short) m.length)
                .put(m)
                .putLong(version)
                .flip();
    }

    /** A LEASE_READ of {@code lengths[i]} bytes at {@code offsets[i]}, at most {@link #MAX_INLINE_RANGES} ranges. */
    static ByteBuffer leaseRead(String model, long version, long[] offsets, long[] lengths) {
        byte[] m = model.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = frame(LEASE_READ, 2 + m.length + 8 + 4 + 16 * offsets.length)
                .putShort((short) m.length)
                .put(m)
                .putLong(version)
                .putInt(offsets.length);
        for (int i = 0; i < offsets.length; i++) {
            b.putLong(offsets[i]).putLong(lengths[i]);
        }
        return b.flip();
    }

    /** The DATA header; {@code total} raw bytes follow it. */
    static ByteBuffer data(long size, long total) {
        return frame(DATA, 16).putLong(size).putLong(total).flip();
    }

    static ByteBuffer grant(long leaseId, long exposureId, long address, long size, byte[] workerAddress, byte[] rkey) {
        if (workerAddress.length > 0xffff || rkey.length > 0xffff) {
            throw new IllegalArgumentException("worker address or rkey longer than 65535 bytes");
        }
        return frame(GRANT, 32 + 2 + workerAddress.length + 2 + rkey.length)
                .putLong(leaseId)
                .putLong(exposureId)
                .putLong(address)
                .putLong(size)
                .putShort((short) workerAddress.length)
                .put(workerAddress)
                .putShort((short) rkey.length)
                .put(rkey)
                .flip();
    }

    static ByteBuffer notAvailable(String reason) {
        byte[] r = reason.getBytes(StandardCharsets.UTF_8);
        if (r.length > 1000) {
            r = Arrays.copyOf(r, 1000);
            reason = new String(r, StandardCharsets.UTF_8);
            r = reason.getBytes(StandardCharsets.UTF_8);
        }
        return frame(NOT_AVAILABLE, 2 + r.length)
                .putShort((short) r.length)
                .put(r)
                .flip();
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
            return checkLease(model, version, "LEASE");
        } catch (BufferUnderflowException e) {
            throw new ProtocolException("LEASE frame truncated");
        }
    }

    private static LeaseRequest checkLease(String model, long version, String what) throws ProtocolException {
        try {
            Manifest.validateModelName(model);
        } catch (ViperConfigException e) {
            throw new ProtocolException(what + ": " + e.getMessage());
        }
        if (version <= 0) {
            throw new ProtocolException(what + ": version must be positive, got " + version);
        }
        return new LeaseRequest(model, version);
    }

    static LeaseReadRequest parseLeaseRead(ByteBuffer p) throws ProtocolException {
        try {
            String model = string(p, "model");
            long version = p.getLong();
            int n = p.getInt();
            if (n < 0 || n > MAX_INLINE_RANGES) {
                throw new ProtocolException("LEASE_READ with " + n + " ranges (allowed 0.." + MAX_INLINE_RANGES + ")");
            }
            long[] offsets = new long[n];
            long[] lengths = new long[n];
            long total = 0;
            for (int i = 0; i < n; i++) {
                offsets[i] = p.getLong();
                lengths[i] = p.getLong();
                if (offsets[i] < 0 || lengths[i] < 0) {
                    throw new ProtocolException("LEASE_READ range " + i + " is negative");
                }
                total += lengths[i];
                if (total > MAX_INLINE) {
                    throw new ProtocolException("LEASE_READ of more than " + MAX_INLINE + " bytes");
                }
            }
            end(p, "LEASE_READ");
            LeaseRequest lease = checkLease(model, version, "LEASE_READ");
            return new LeaseReadRequest(lease.model(), lease.version(), offsets, lengths);
        } catch (BufferUnderflowException e) {
            throw new ProtocolException("LEASE_READ frame truncated");
        }
    }

    /** The DATA header: {size, total}. */
    static long[] parseData(ByteBuffer p) throws ProtocolException {
        try {
            long size = p.getLong();
            long total = p.getLong();
            end(p, "DATA");
            return new long[] {size, total};
        } catch (BufferUnderflowException e) {
            throw new ProtocolException("DATA frame truncated");
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
                throw new ProtocolException(
                        "GRANT: missing worker address, rkey or memory address for " + size + " bytes");
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
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(b))
                    .toString();
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
