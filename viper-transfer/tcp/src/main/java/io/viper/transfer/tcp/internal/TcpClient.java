package io.viper.transfer.tcp.internal;

import io.netty.buffer.Unpooled;
import io.viper.auth.ClientAuth;
import io.viper.auth.Handshake;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.errors.ViperTimeoutException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.net.HostPort;
import io.viper.net.Tls;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import java.io.EOFException;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedSelectorException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import javax.net.ssl.SSLContext;

/**
 * The consumer side of the {@code tcp://} transport.
 *
 * <p>It uses plain non-blocking NIO rather than Netty: each {@link #read} runs on the caller's thread over a connection
 * it has to itself and reads the bytes with {@code SocketChannel.read} straight into slices of the caller's destination
 * segment, so the payload is copied once (kernel to destination) and never staged in an intermediate buffer; Netty's
 * inbound path would read into its own buffers and need a second copy. A per-connection selector bounds every wait by
 * {@code viper.transfer.timeout.ms} of no progress; a reset or EOF surfaces at once.
 *
 * <p>Connections are pooled per producer address and reused; concurrent reads use separate connections. Thread-safe.
 */
public final class TcpClient implements TransportClient.ArrivalReporting {
    private static final System.Logger LOG = System.getLogger(TcpClient.class.getName());
    /** Idle connections kept per producer address. */
    private static final int MAX_IDLE_PER_ADDRESS = 8;
    /**
     * Destination bytes per {@code SocketChannel.read} view of native memory (read into directly); each slice is
     * reported as arrived once full.
     */
    private static final long READ_SLICE = 1024 * 1024;
    /** The same for a heap destination, which the JDK reads through a temporary direct buffer of this size. */
    private static final long HEAP_READ_SLICE = 1024 * 1024;

    private final long timeoutMs;
    private final ClientAuth auth;
    /** TLS for every connection, or null for plain TCP. */
    private final SSLContext tls;

    private final Map<InetSocketAddress, Deque<ClientConnection>> idle = new ConcurrentHashMap<>();
    private final Set<ClientConnection> all = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    /**
     * A client whose reads fail after {@code timeoutMs} without progress ({@code viper.transfer.timeout.ms}), whose
     * connections prove {@code auth}'s credentials and run over TLS with {@code tls} (null: plain).
     */
    public TcpClient(long timeoutMs, ClientAuth auth, SSLContext tls) {
        this.timeoutMs = timeoutMs;
        this.auth = auth;
        this.tls = tls;
    }

    /** Reports each slice of {@value #READ_SLICE} bytes (or a range's last part) as soon as it is read. */
    @Override
    public void read(
            Manifest manifest,
            Location location,
            List<ByteRange> ranges,
            MemorySegment destination,
            Arrivals arrivals) {
        checkOpen();
        InetSocketAddress address = HostPort.parse(location.uri(), "tcp", false).resolve();
        String what = manifest.model() + " v" + manifest.version() + " from " + location.uri();
        List<ByteRange> work = validateAndCoalesce(manifest, ranges, destination, what);
        onPooledConnection(address, what, (conn, answered) -> {
            transfer(conn, manifest, work, destination, what, answered, arrivals);
            return null;
        });
    }

    /** One request and its answers on a connection of the pool, which {@code answered} says have begun to arrive. */
    private interface Exchange<T> {
        T run(ClientConnection conn, boolean[] answered) throws IOException;
    }

    /**
     * Runs {@code exchange} on an idle pooled connection to {@code address} (or a new one) and gives the connection
     * back to the pool. A pooled connection that fails before any answer (the producer dropped it while it was idle) is
     * tried once more on a fresh one; a NOT_AVAILABLE refusal leaves the connection clean; any other failure discards
     * it.
     */
    private <T> T onPooledConnection(InetSocketAddress address, String what, Exchange<T> exchange) {
        for (int attempt = 1; ; attempt++) {
            ClientConnection conn = idle(address);
            boolean reused = conn != null;
            if (conn == null) {
                conn = connect(address, what);
            }
            boolean[] answered = new boolean[1];
            try {
                T result = exchange.run(conn, answered);
                release(conn);
                return result;
            } catch (ViperNotFoundException e) {
                // A refusal by the producer (NOT_AVAILABLE) leaves the connection in a clean state.
                release(conn);
                throw e;
            } catch (IOException | CancelledKeyException | ClosedSelectorException e) {
                discard(conn);
                if (closed) {
                    throw new ViperClosedException("tcp client closed while reading " + what);
                }
                if (reused && !answered[0] && attempt == 1) {
                    LOG.log(
                            Level.DEBUG,
                            () -> "tcp read of " + what + ": pooled connection failed (" + e + "), reconnecting");
                    continue;
                }
                throw failure(e, what);
            } catch (RuntimeException | Error e) {
                discard(conn);
                throw e;
            }
        }
    }

    /** One TRACK round trip on a pooled connection: where the producer's tracker sends this reader. */
    @Override
    public Optional<List<URI>> askSources(Manifest manifest, Location producer, List<URI> relay, List<URI> failed) {
        checkOpen();
        InetSocketAddress address = HostPort.parse(producer.uri(), "tcp", false).resolve();
        String what = "the sources of " + manifest.model() + " v" + manifest.version() + " at " + producer.uri();
        byte[] model = manifest.model().getBytes(StandardCharsets.UTF_8);
        byte[] relays = TcpProtocol.uriList(relay);
        byte[] fails = TcpProtocol.uriList(failed);
        int size = TcpProtocol.HEADER_BYTES + 10 + model.length + relays.length + fails.length;
        ByteBuffer frame = ByteBuffer.allocate(TcpProtocol.LENGTH_BYTES + size)
                .putInt(size)
                .put(TcpProtocol.VERSION)
                .put(TcpProtocol.TRACK)
                .putLong(manifest.version())
                .putShort((short) model.length)
                .put(model)
                .put(relays)
                .put(fails)
                .flip();
        return Optional.of(onPooledConnection(address, what, (conn, answered) -> {
            conn.write(new ByteBuffer[] {frame.duplicate()});
            ByteBuffer response = conn.readFrame();
            answered[0] = true;
            byte type = response.get();
            if (type == TcpProtocol.ERROR) {
                throw new ClientConnection.ProtocolViolation("the producer refused TRACK: " + reason(response));
            }
            if (type != TcpProtocol.SOURCES) {
                throw new ClientConnection.ProtocolViolation("expected SOURCES, got " + TcpProtocol.typeName(type));
            }
            return sources(response);
        }));
    }

    /** The locations of a SOURCES frame, each checked as the server checks a TRACK's. */
    private static List<URI> sources(ByteBuffer frame) throws IOException {
        try {
            return RequestDecoder.uris(Unpooled.wrappedBuffer(frame), "SOURCES");
        } catch (RequestDecoder.MalformedRequestException e) {
            throw new ClientConnection.ProtocolViolation(e.getMessage());
        }
    }

    /**
     * One round trip: LEASE, the READs of the lease just taken (lease id 0) and its RELEASE go out in one write; the
     * answers are LEASED, DATA per READ, RELEASED, or only NOT_AVAILABLE, after which the server skips the READs and
     * the RELEASE.
     */
    private void transfer(
            ClientConnection conn,
            Manifest manifest,
            List<ByteRange> ranges,
            MemorySegment destination,
            String what,
            boolean[] answered,
            Arrivals arrivals)
            throws IOException {
        byte[] model = manifest.model().getBytes(StandardCharsets.UTF_8);
        List<ByteBuffer> requests = new ArrayList<>();
        requests.add(ByteBuffer.allocate(TcpProtocol.LENGTH_BYTES + TcpProtocol.HEADER_BYTES + 10 + model.length)
                .putInt(TcpProtocol.HEADER_BYTES + 10 + model.length)
                .put(TcpProtocol.VERSION)
                .put(TcpProtocol.LEASE)
                .putLong(manifest.version())
                .putShort((short) model.length)
                .put(model)
                .flip());
        List<List<ByteRange>> batches = new ArrayList<>();
        for (int from = 0; from < ranges.size(); from += TcpProtocol.MAX_RANGES_PER_READ) {
            List<ByteRange> batch =
                    ranges.subList(from, Math.min(ranges.size(), from + TcpProtocol.MAX_RANGES_PER_READ));
            batches.add(batch);
            ByteBuffer read =
                    ByteBuffer.allocate(TcpProtocol.LENGTH_BYTES + TcpProtocol.HEADER_BYTES + 12 + 16 * batch.size());
            read.putInt(TcpProtocol.HEADER_BYTES + 12 + 16 * batch.size())
                    .put(TcpProtocol.VERSION)
                    .put(TcpProtocol.READ)
                    .putLong(TcpProtocol.LAST_LEASE)
                    .putInt(batch.size());
            for (ByteRange r : batch) {
                read.putLong(r.sourceOffset()).putLong(r.length());
            }
            requests.add(read.flip());
        }
        requests.add(ByteBuffer.allocate(TcpProtocol.LENGTH_BYTES + TcpProtocol.HEADER_BYTES + 8)
                .putInt(TcpProtocol.HEADER_BYTES + 8)
                .put(TcpProtocol.VERSION)
                .put(TcpProtocol.RELEASE)
                .putLong(TcpProtocol.LAST_LEASE)
                .flip());
        conn.write(requests.toArray(ByteBuffer[]::new));
        ByteBuffer response = conn.readFrame();
        answered[0] = true;
        byte type = response.get();
        if (type == TcpProtocol.NOT_AVAILABLE) {
            throw new ViperNotFoundException("tcp read of " + what + ": " + reason(response));
        }
        expect(type, TcpProtocol.LEASED, response, 16);
        long leaseId = response.getLong();
        long size = response.getLong();
        if (size != manifest.totalBytes()) {
            // The producer serves a different checkpoint under this name and version; the READs already
            // sent may not fit it, so this connection is not reused.
            throw new ClientConnection.ProtocolViolation("the producer stages " + size + " bytes of " + what
                    + " but the manifest promises " + manifest.totalBytes());
        }
        for (List<ByteRange> batch : batches) {
            receive(conn, batch, destination, arrivals);
        }
        ByteBuffer released = conn.readFrame();
        expect(released.get(), TcpProtocol.RELEASED, released, 8);
        if (released.getLong() != leaseId) {
            throw new ClientConnection.ProtocolViolation("RELEASED names another lease than " + leaseId);
        }
    }

    /** Receives one READ's DATA into the destination, reporting each slice as it is complete. */
    private static void receive(
            ClientConnection conn, List<ByteRange> batch, MemorySegment destination, Arrivals arrivals)
            throws IOException {
        long total = 0;
        for (ByteRange r : batch) {
            total += r.length();
        }
        ByteBuffer data = conn.readFrame();
        expect(data.get(), TcpProtocol.DATA, data, 8);
        long announced = data.getLong();
        if (announced != total) {
            throw new ClientConnection.ProtocolViolation("DATA announces " + announced + " bytes, requested " + total);
        }
        long slice = destination.isNative() ? READ_SLICE : HEAP_READ_SLICE;
        for (ByteRange r : batch) {
            for (long done = 0; done < r.length(); ) {
                long n = Math.min(slice, r.length() - done);
                conn.readFully(
                        destination.asSlice(r.destinationOffset() + done, n).asByteBuffer());
                arrivals.arrived(r.destinationOffset() + done, n);
                done += n;
            }
        }
    }

    private static void expect(byte type, byte expected, ByteBuffer frame, int payload) throws IOException {
        if (type == TcpProtocol.ERROR) {
            throw new ClientConnection.ProtocolViolation("the producer refused the request: " + reason(frame));
        }
        if (type != expected) {
            throw new ClientConnection.ProtocolViolation(
                    "expected " + TcpProtocol.typeName(expected) + ", got " + TcpProtocol.typeName(type));
        }
        if (frame.remaining() != payload) {
            throw new ClientConnection.ProtocolViolation(
                    TcpProtocol.typeName(type) + " with " + frame.remaining() + " payload bytes, expected " + payload);
        }
    }

    private static String reason(ByteBuffer frame) throws IOException {
        if (frame.remaining() < 2) {
            throw new ClientConnection.ProtocolViolation("reason frame too short");
        }
        int n = Short.toUnsignedInt(frame.getShort());
        if (frame.remaining() != n) {
            throw new ClientConnection.ProtocolViolation("reason length " + n + " does not match the frame");
        }
        byte[] text = new byte[n];
        frame.get(text);
        return new String(text, StandardCharsets.UTF_8);
    }

    /** Checks the ranges against the manifest and the destination; merges runs that are contiguous on both sides. */
    private static List<ByteRange> validateAndCoalesce(
            Manifest manifest, List<ByteRange> ranges, MemorySegment destination, String what) {
        if (destination.isReadOnly()) {
            throw new ViperConfigException("tcp read of " + what + ": the destination segment is read-only");
        }
        long total = manifest.totalBytes();
        long cap = destination.byteSize();
        List<ByteRange> out = new ArrayList<>(ranges.size());
        for (ByteRange r : ranges) {
            if (r.sourceOffset() > total || r.length() > total - r.sourceOffset()) {
                throw new ViperConfigException("tcp read of " + what + ": range " + r.sourceOffset() + "+" + r.length()
                        + " lies outside the checkpoint's " + total + " bytes");
            }
            if (r.destinationOffset() > cap || r.length() > cap - r.destinationOffset()) {
                throw new ViperConfigException("tcp read of " + what + ": range to " + r.destinationOffset() + "+"
                        + r.length() + " lies outside the destination's " + cap + " bytes");
            }
            if (r.length() == 0) {
                continue;
            }
            if (!out.isEmpty()) {
                ByteRange prev = out.getLast();
                if (prev.sourceOffset() + prev.length() == r.sourceOffset()
                        && prev.destinationOffset() + prev.length() == r.destinationOffset()) {
                    out.set(
                            out.size() - 1,
                            new ByteRange(prev.sourceOffset(), prev.length() + r.length(), prev.destinationOffset()));
                    continue;
                }
            }
            out.add(r);
        }
        return out;
    }

    private RetriableViperException failure(Exception e, String what) {
        if (e instanceof SocketTimeoutException) {
            return new ViperTimeoutException("tcp read of " + what + ": " + e.getMessage(), e);
        }
        String detail = e instanceof EOFException
                ? e.getMessage()
                : e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        return new RetriableViperException(
                ViperException.Reason.TRANSFER, "tcp read of " + what + " failed: " + detail, e);
    }

    private ClientConnection idle(InetSocketAddress address) {
        Deque<ClientConnection> q = idle.get(address);
        if (q == null) {
            return null;
        }
        for (ClientConnection c; (c = q.pollFirst()) != null; ) {
            if (c.isReusable()) {
                return c;
            }
            discard(c);
        }
        return null;
    }

    private ClientConnection connect(InetSocketAddress address, String what) {
        try {
            ClientConnection c = ClientConnection.connect(address, Math.min(timeoutMs, 30_000), auth, tls);
            all.add(c);
            if (closed) {
                discard(c);
                checkOpen();
            }
            return c;
        } catch (Handshake.Refused e) {
            throw new ViperConfigException(
                    "tcp read of " + what + ": " + e.getMessage(), e); // the cause tells a refusal of credentials
        } catch (IOException e) {
            Optional<String> untrusted = Tls.certificateRefused(e);
            if (untrusted.isPresent()) {
                throw new ViperConfigException(
                        "tcp read of " + what + ": the producer's TLS certificate is refused: " + untrusted.get(), e);
            }
            throw ViperException.of(
                    e instanceof SocketTimeoutException
                            ? ViperException.Reason.TIMEOUT
                            : ViperException.Reason.UNAVAILABLE,
                    "tcp read of " + what + ": cannot connect: "
                            + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()),
                    e);
        }
    }

    private void release(ClientConnection c) {
        if (closed || c.isClosed()) {
            discard(c);
            return;
        }
        Deque<ClientConnection> q = idle.computeIfAbsent(c.address(), a -> new ConcurrentLinkedDeque<>());
        if (q.size() >= MAX_IDLE_PER_ADDRESS) {
            discard(c);
            return;
        }
        q.addFirst(c);
        if (closed) {
            // close() ran concurrently and may have missed it.
            q.remove(c);
            discard(c);
        }
    }

    private void discard(ClientConnection c) {
        all.remove(c);
        c.close();
    }

    private void checkOpen() {
        if (closed) {
            throw new ViperClosedException("tcp transport client is closed");
        }
    }

    /** Closes every connection, including those of reads in progress (they fail with a CLOSED error). Idempotent. */
    @Override
    public void close() {
        closed = true;
        for (ClientConnection c : all) {
            discard(c);
        }
        idle.clear();
    }
}
