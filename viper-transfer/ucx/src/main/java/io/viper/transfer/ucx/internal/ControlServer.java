package io.viper.transfer.ucx.internal;

import static io.viper.transfer.ucx.internal.UcxExposures.closeQuietly;

import io.viper.auth.ConnectionGate;
import io.viper.auth.Handshake;
import io.viper.manifest.Location;
import io.viper.net.FrameChannel;
import io.viper.net.PeerLimit;
import io.viper.spi.ReadLease;
import io.viper.transfer.ucx.internal.UcxExposures.Exposure;
import io.viper.transfer.ucx.internal.UcxExposures.Taken;
import java.io.EOFException;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The TCP control channel of a {@link UcxServer}: accepts connections (one acceptor thread, then one platform thread
 * per connection), runs the authentication handshake, and answers LEASE with a GRANT (the worker address, the memory's
 * address and packed rkey, from which the consumer GETs the bytes), LEASE_READ with the bytes themselves, and RELEASE.
 * A connection's leases close with it.
 */
final class ControlServer {
    private static final System.Logger LOG = System.getLogger(UcxServer.class.getName());
    private static final int MAX_LEASES_PER_CONNECTION = 64;

    /** One control connection and the leases taken on it. */
    private static final class Connection {
        final SocketChannel socket;
        final String peer;
        final PeerLimit.Admission admission;
        final Map<Long, ReadLease> leases = new ConcurrentHashMap<>();
        /** The frames over {@link #socket}, once its serving thread made them: closing it wakes that thread. */
        volatile FrameChannel channel;

        Connection(SocketChannel socket, InetSocketAddress remote, PeerLimit.Admission admission) {
            this.socket = socket;
            this.admission = admission;
            this.peer = String.valueOf(remote);
        }

        void closeLeases() {
            for (Long id : List.copyOf(leases.keySet())) {
                ReadLease l = leases.remove(id);
                if (l != null) {
                    closeQuietly(l);
                }
            }
        }

        void closeSocket() {
            FrameChannel ch = channel;
            if (ch != null) {
                ch.close();
            }
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    private final UcxSettings settings;
    private final ServerSocketChannel serverSocket;
    private final ConnectionGate limits;
    private final Location location;
    private final byte[] workerAddress;
    private final UcxExposures exposures;
    private final Thread acceptor;
    private final AtomicLong leaseIds = new AtomicLong();
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    /** Guarded by this. */
    private boolean closed;

    /**
     * Starts accepting on {@code serverSocket} (bound already) for the server at {@code location}: leases are taken on
     * {@code exposures}, and a GRANT names the worker at {@code workerAddress}.
     */
    ControlServer(
            UcxSettings settings,
            ServerSocketChannel serverSocket,
            ConnectionGate limits,
            Location location,
            byte[] workerAddress,
            UcxExposures exposures) {
        this.settings = settings;
        this.serverSocket = serverSocket;
        this.limits = limits;
        this.location = location;
        this.workerAddress = workerAddress;
        this.exposures = exposures;
        this.acceptor = Thread.ofPlatform()
                .daemon()
                .name("viper-ucx-accept-" + location.uri().getPort())
                .unstarted(this::acceptLoop);
        acceptor.start();
    }

    private void acceptLoop() {
        while (true) {
            SocketChannel s;
            InetSocketAddress remote;
            try {
                s = serverSocket.accept();
                remote = (InetSocketAddress) s.getRemoteAddress();
            } catch (IOException e) {
                if (serverSocket.isOpen()) {
                    LOG.log(
                            Level.WARNING,
                            "ucx server " + location.uri() + ": accept failed, no longer serving: " + e.getMessage(),
                            e);
                }
                return;
            }
            PeerLimit.Admission admission = limits.peers().admit(remote.getAddress(), null);
            if (admission == null) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // refusing anyway
                }
                continue;
            }
            Connection c = new Connection(s, remote, admission);
            connections.add(c);
            synchronized (this) {
                if (closed) {
                    connections.remove(c);
                    c.closeSocket();
                    c.admission.release();
                    continue;
                }
            }
            // A platform thread: consumers keep their control connections open between reads, and a
            // blocked platform thread wakes one hand-off sooner than a virtual one (no poller).
            Thread.ofPlatform().daemon().name("viper-ucx-control-" + c.peer).start(() -> serve(c));
        }
    }

    /**
     * One control connection: the authentication handshake, the magic, then requests until the consumer closes. Every
     * frame must arrive whole within {@code viper.limits.idle.ms}, or, while the connection holds leases (the consumer
     * is reading), within the transfer timeout plus 10 s.
     */
    private void serve(Connection c) {
        try (FrameChannel ch = FrameChannel.of(c.socket, limits.frames(1))) {
            c.channel = ch;
            if (isClosed()) {
                return; // close() may have missed the channel
            }
            limits.handshake(ch, c.peer, c.admission); // a peer without the key gets nothing else
            ByteBuffer magic = ByteBuffer.allocate(4);
            ch.readFully(magic, limits.requestDeadline());
            if (magic.getInt(0) != ControlProtocol.MAGIC) {
                throw new ControlProtocol.ProtocolException(
                        "not a Viper ucx control connection (magic 0x" + Integer.toHexString(magic.getInt(0)) + ")");
            }
            while (true) {
                ByteBuffer frame;
                try {
                    frame = ch.readFrame(
                            c.leases.isEmpty()
                                    ? limits.requestDeadline()
                                    : ConnectionGate.deadlineAfter(settings.transferTimeoutMs() + 10_000));
                } catch (EOFException e) {
                    return;
                }
                byte type = frame.get();
                ByteBuffer p = frame.slice();
                ByteBuffer reply = switch (type) {
                    case ControlProtocol.LEASE -> lease(c, ControlProtocol.parseLease(p));
                    case ControlProtocol.LEASE_READ -> leaseRead(ControlProtocol.parseLeaseRead(p), ch);
                    case ControlProtocol.RELEASE -> {
                        long id = ControlProtocol.parseLeaseId(p, "RELEASE");
                        ReadLease lease = c.leases.remove(id);
                        if (lease == null) {
                            throw new ControlProtocol.ProtocolException(
                                    "RELEASE of lease " + id + " that this connection does not hold");
                        }
                        closeQuietly(lease);
                        yield ControlProtocol.released(id);
                    }
                    default ->
                        throw new ControlProtocol.ProtocolException(
                                "unexpected frame " + ControlProtocol.typeName(type));
                };
                if (reply != null) {
                    ch.write(limits.requestDeadline(), reply);
                }
            }
        } catch (ControlProtocol.ProtocolException | ProtocolException | Handshake.Refused e) {
            LOG.log(
                    Level.WARNING,
                    "ucx server " + location.uri() + ": closing control connection from " + c.peer + ": "
                            + e.getMessage());
        } catch (SocketTimeoutException e) {
            LOG.log(
                    Level.WARNING,
                    "ucx server " + location.uri() + ": closing control connection from " + c.peer + ": "
                            + e.getMessage());
        } catch (IOException e) {
            if (!isClosed()) {
                LOG.log(
                        Level.DEBUG,
                        () -> "ucx server " + location.uri() + ": control connection from " + c.peer + " broke: "
                                + e.getMessage());
            }
        } catch (RuntimeException e) {
            LOG.log(
                    Level.WARNING,
                    "ucx server " + location.uri() + ": closing control connection from " + c.peer + ": " + e,
                    e);
        } finally {
            c.closeSocket();
            c.closeLeases();
            connections.remove(c);
            c.admission.release();
        }
    }

    private synchronized boolean isClosed() {
        return closed;
    }

    private ByteBuffer lease(Connection c, ControlProtocol.LeaseRequest req) throws ControlProtocol.ProtocolException {
        if (c.leases.size() >= MAX_LEASES_PER_CONNECTION) {
            throw new ControlProtocol.ProtocolException(
                    "more than " + MAX_LEASES_PER_CONNECTION + " open leases on one connection");
        }
        Taken t = exposures.take(req.model(), req.version());
        if (t.lease() == null) {
            return ControlProtocol.notAvailable(t.refusal());
        }
        Exposure e = t.exposure();
        long id;
        synchronized (this) {
            id = leaseIds.incrementAndGet();
            c.leases.put(id, t.lease());
        }
        return ControlProtocol.grant(
                id, e.registrationId, e.address, e.size, e.size == 0 ? new byte[0] : workerAddress, e.rkey);
    }

    /**
     * A whole small read: takes the lease, copies DATA and the bytes of the ranges from the staged memory into a frame,
     * closes the lease and writes the frame (so the lease is closed before the consumer can read the answer); returns
     * null once written, or NOT_AVAILABLE to send.
     */
    private ByteBuffer leaseRead(ControlProtocol.LeaseReadRequest req, FrameChannel out)
            throws IOException, ControlProtocol.ProtocolException {
        Taken t = exposures.take(req.model(), req.version());
        if (t.lease() == null) {
            return ControlProtocol.notAvailable(t.refusal());
        }
        byte[] bytes;
        try (ReadLease lease = t.lease()) {
            MemorySegment data = t.exposure().staged.data();
            long size = data.byteSize();
            for (int i = 0; i < req.offsets().length; i++) {
                if (req.offsets()[i] > size || req.lengths()[i] > size - req.offsets()[i]) {
                    throw new ControlProtocol.ProtocolException(
                            "LEASE_READ range " + req.offsets()[i] + "+" + req.lengths()[i] + " lies outside the "
                                    + size + " bytes of " + req.model() + " v" + req.version());
                }
            }
            ByteBuffer header = ControlProtocol.data(size, req.total());
            bytes = new byte[(int) (header.remaining() + req.total())];
            header.get(bytes, 0, header.remaining());
            int at = header.capacity();
            for (int i = 0; i < req.offsets().length; i++) {
                MemorySegment.copy(data, ValueLayout.JAVA_BYTE, req.offsets()[i], bytes, at, (int) req.lengths()[i]);
                at += (int) req.lengths()[i];
            }
        }
        out.write(limits.requestDeadline(), ByteBuffer.wrap(bytes));
        return null;
    }

    /**
     * Stops accepting and closes every connection, and with it every lease; returns whether leases were open (consumers
     * may be about to unpack an rkey), then waits for the acceptor to end.
     */
    boolean close() {
        synchronized (this) {
            closed = true;
        }
        try {
            serverSocket.close();
        } catch (IOException e) {
            LOG.log(Level.DEBUG, () -> "ucx server: closing the listening socket: " + e.getMessage());
        }
        boolean leased = false;
        for (Connection c : List.copyOf(connections)) {
            leased |= !c.leases.isEmpty();
            c.closeSocket();
            c.closeLeases();
        }
        return leased;
    }

    /** Waits up to 5 s for the acceptor thread to end, after {@link #close()}. */
    void awaitAcceptor() {
        try {
            acceptor.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
