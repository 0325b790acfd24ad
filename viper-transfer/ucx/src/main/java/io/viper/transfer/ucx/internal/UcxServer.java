package io.viper.transfer.ucx.internal;

import io.viper.ViperConfig;
import io.viper.auth.ConnectionGate;
import io.viper.auth.Handshake;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperUnsupportedException;
import io.viper.manifest.Location;
import io.viper.net.FrameChannel;
import io.viper.net.HostPort;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import io.viper.spi.StagingAllocator;
import io.viper.spi.TransportServer;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.lang.System.Logger.Level;
import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * Producer side of the ucx transport. Registers each exposed checkpoint's memory with UCX (once per
 * exposed version) and answers lease requests on a TCP control channel with the worker address, the
 * memory address and the packed rkey; consumers then read the bytes with RDMA GETs, which need no
 * work from this side.
 *
 * <p>Threads: one acceptor thread; one virtual thread per control connection; one UCX progress
 * thread ({@link WorkerLoop}) that owns the context, the worker and every registration. The staged
 * memory stays owned by the producer's staging cache; this server only registers it between
 * {@link #expose} and {@link #withdraw}.
 */
public final class UcxServer implements TransportServer {
    private static final System.Logger LOG = System.getLogger(UcxServer.class.getName());
    private static final int MAX_LEASES_PER_CONNECTION = 64;
    private static final long LOOP_CALL_TIMEOUT_MS = 30_000;
    /**
     * How long {@code close} keeps memory registered after closing connections that held leases:
     * UCX 1.13 crashes a consumer that unpacks the rkey of memory already unmapped, and a consumer
     * checks its connection right before unpacking.
     */
    private static final long UNMAP_GRACE_MS = 1_000;
    private static final AtomicLong EXPOSURE_IDS = new AtomicLong(new java.security.SecureRandom().nextLong() >>> 16);

    private record Key(String model, long version) {
    }

    /**
     * One exposed version: the registered memory consumers read ({@code address}, {@code size}),
     * either the staging buffer itself or a copy in UCX-allocated memory. {@code memory} is mapped and
     * unmapped on the loop thread only.
     */
    private static final class Exposure {
        final StagedCheckpoint staged;
        final long size;
        /** Unique per registration for this server's lifetime: consumers cache unpacked rkeys under it. */
        final long id = EXPOSURE_IDS.incrementAndGet();
        volatile long address;
        volatile UcpMemory memory;
        volatile byte[] rkey = new byte[0];
        /** The registration consumers cache their unpacked rkey under (an allocation's, when reused). */
        volatile long registrationId = id;
        /** Whether this exposure registered memory of its own (else it borrows a staging allocation's). */
        volatile boolean owned = true;

        Exposure(StagedCheckpoint staged, long size) {
            this.staged = staged;
            this.size = size;
        }
    }

    /**
     * A staging buffer UCX allocated and registered once; versions staged in it are exposed without
     * a copy, under the same registration id, so consumers keep its unpacked rkey across versions.
     */
    private final class Allocation implements StagingAllocator.Memory {
        final long id = EXPOSURE_IDS.incrementAndGet();
        final long address;
        final long size;
        final byte[] rkey;
        final MemorySegment segment;
        volatile UcpMemory memory;

        Allocation(UcpMemory memory, long size) {
            this.memory = memory;
            this.address = memory.getAddress();
            this.size = size;
            this.rkey = toBytes(memory.getRemoteKeyBuffer());
            this.segment = MemorySegment.ofAddress(address).reinterpret(size);
        }

        boolean contains(MemorySegment data) {
            return data.address() >= address && data.address() + data.byteSize() <= address + size;
        }

        @Override
        public MemorySegment segment() {
            return segment;
        }

        @Override
        public void close() {
            synchronized (UcxServer.this) {
                if (!allocations.remove(this)) {
                    return;
                }
            }
            try {
                loop.call(() -> {
                    UcpMemory m = memory;
                    memory = null;
                    if (m != null) {
                        m.deregister();
                    }
                    return null;
                }, LOOP_CALL_TIMEOUT_MS);
            } catch (ViperClosedException | RetriableViperException e) {
                LOG.log(Level.DEBUG, () -> "ucx server: freeing a staging buffer skipped: " + e.getMessage());
            }
        }
    }

    /** One control connection and the leases taken on it. */
    private static final class Connection {
        final SocketChannel socket;
        final InetAddress address;
        final String peer;
        final Map<Long, ReadLease> leases = new ConcurrentHashMap<>();
        /** The frames over {@link #socket}, once its serving thread made them: closing it wakes that thread. */
        volatile FrameChannel channel;

        Connection(SocketChannel socket, InetSocketAddress remote) {
            this.socket = socket;
            this.address = remote.getAddress();
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
    private final UcxMemoryMode mode;
    private final ServerSocketChannel serverSocket;
    private final ConnectionGate limits;
    private final Location location;
    private final WorkerLoop loop;
    private final byte[] workerAddress;
    private final Thread acceptor;
    private final AtomicLong leaseIds = new AtomicLong();
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    /** Guarded by this. */
    private final Map<Key, Exposure> exposed = new HashMap<>();
    /** Staging buffers allocated through {@link #stagingAllocator()}; guarded by this. */
    private final List<Allocation> allocations = new ArrayList<>();
    /** Guarded by this. */
    private boolean closed;
    /**
     * Held shared by {@code expose} and {@code withdraw} while they register, copy into or unmap
     * memory, and exclusively by {@code close}, so that the context is never closed under a copy.
     */
    private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();

    private UcxServer(UcxSettings settings, UcxMemoryMode mode, ServerSocketChannel serverSocket, Location location, WorkerLoop loop,
                      byte[] workerAddress, ConnectionGate limits) {
        this.settings = settings;
        this.limits = limits;
        this.mode = mode;
        this.serverSocket = serverSocket;
        this.location = location;
        this.loop = loop;
        this.workerAddress = workerAddress;
        this.acceptor = Thread.ofPlatform().daemon().name("viper-ucx-accept-" + location.uri().getPort()).unstarted(this::acceptLoop);
        acceptor.start();
    }

    /** Binds the control channel to {@code bind} ({@code ucx://host:port}, port 0 for any) and starts the UCX worker. */
    public static UcxServer open(URI bind, ViperConfig config) {
        return open(bind, config, UcxMemoryMode.HOST);
    }

    /** As {@link #open(URI, ViperConfig)}, exposing the memory {@code mode} says under its scheme. */
    public static UcxServer open(URI bind, ViperConfig config, UcxMemoryMode mode) {
        UcxSettings settings = UcxSettings.from(config);
        HostPort address = HostPort.parse(bind, mode.scheme(), true);
        InetSocketAddress socketAddress = address.resolve();
        ConnectionGate limits = ConnectionGate.forServer(config, mode.scheme(), socketAddress.getAddress(), ControlProtocol.MAX_FRAME);
        ServerSocketChannel ss;
        int port;
        try {
            ss = ServerSocketChannel.open();
            ss.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            ss.bind(socketAddress, 128);
            port = ((InetSocketAddress) ss.getLocalAddress()).getPort();
        } catch (IOException e) {
            throw new ViperException(ViperException.Reason.IO, "ucx server: cannot bind " + bind + ": " + e.getMessage(), e);
        }
        WorkerLoop loop = null;
        try {
            Location location = new Location(address.withPort(port).advertised().uri(mode.scheme()), mode.tier());
            loop = new WorkerLoop("viper-ucx-server-" + port, UcxNative.serverParams(socketAddress.getAddress()));
            WorkerLoop l = loop;
            byte[] worker = loop.call(() -> toBytes(l.worker().getAddress()), LOOP_CALL_TIMEOUT_MS);
            return new UcxServer(settings, mode, ss, location, loop, worker, limits);
        } catch (RuntimeException | LinkageError e) {
            if (loop != null) {
                loop.close(() -> { }, 5_000);
            }
            try {
                ss.close();
            } catch (IOException ignored) {
                // reporting the first failure
            }
            if (e instanceof ViperException ve) {
                throw ve;
            }
            throw new ViperUnsupportedException("ucx server: cannot start UCX: " + UcxNative.oneLine(String.valueOf(e.getMessage())), e);
        }
    }

    static byte[] toBytes(ByteBuffer b) {
        ByteBuffer d = b.duplicate();
        d.clear();
        byte[] out = new byte[d.remaining()];
        d.get(out);
        return out;
    }

    @Override
    public Location location() {
        return location;
    }

    /**
     * Staging buffers in memory UCX allocates and registers once (unless {@code viper.ucx.copy=false},
     * where staged buffers are registered in place): UCX 1.13 reads such memory between processes at
     * memcpy speed, while a GET from memory registered in place takes its slow software path.
     */
    @Override
    public Optional<StagingAllocator> stagingAllocator() {
        if (!settings.copyToUcxMemory() || mode.device()) {
            return Optional.empty();
        }
        return Optional.of(bytes -> {
            lifecycle.readLock().lock();
            try {
                synchronized (this) {
                    requireOpen();
                }
                Allocation a = loop.call(() -> new Allocation(loop.context().memoryMap(new UcpMemMapParams().allocate().setLength(bytes)), bytes),
                        LOOP_CALL_TIMEOUT_MS);
                synchronized (this) {
                    allocations.add(a);
                }
                return a;
            } catch (RuntimeException e) {
                if (e instanceof ViperException ve) {
                    throw ve;
                }
                throw new RetriableViperException(ViperException.Reason.TRANSFER, "ucx server: cannot allocate a staging buffer of " + bytes + " bytes: "
                        + UcxNative.oneLine(String.valueOf(e.getMessage())), e);
            } finally {
                lifecycle.readLock().unlock();
            }
        });
    }

    /**
     * Registers {@code staged}'s data for RDMA: by default copies it into memory allocated by UCX
     * ({@link io.viper.transfer.ucx.UcxConfig#COPY}), else registers the staging buffer in place. Blocks the calling
     * (producer background) thread for the copy. In the GPU mode a version staged on the GPU is
     * registered in place as device memory (no copy); others are registered in place in host memory.
     */
    @Override
    public void expose(StagedCheckpoint staged) {
        Key key = new Key(staged.model(), staged.version());
        String what = key.model() + " v" + key.version();
        MemorySegment data = staged.data();
        Optional<DeviceBuffer> device = mode.device() ? staged.device() : Optional.empty();
        if (device.isPresent() && device.get().byteSize() < data.byteSize()) {
            throw new ViperConfigException("ucx server: the GPU staging buffer of " + what + " holds " + device.get().byteSize()
                    + " bytes, the version has " + data.byteSize());
        }
        if (device.isEmpty() && !data.isNative()) {
            throw new ViperConfigException("ucx server: staged data of " + what + " is not in native memory");
        }
        lifecycle.readLock().lock();
        try {
            synchronized (this) {
                requireOpen();
                Exposure old = exposed.get(key);
                if (old != null && old.staged == staged) {
                    return;
                }
            }
            Exposure e = new Exposure(staged, data.byteSize());
            Allocation home = null;
            synchronized (this) {
                for (Allocation a : allocations) {
                    if (a.contains(data)) {
                        home = a;
                    }
                }
            }
            if (device.isPresent() && e.size > 0) {
                registerInPlace(e, device.get().devicePointer(), mode.memoryType(), what + " (GPU staging)");
            } else if (mode.device() && e.size > 0) {
                registerInPlace(e, data.address(), UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST, what + " (host staging)");
            } else if (home != null) {
                e.owned = false;
                e.address = data.address();
                e.rkey = home.rkey;
                e.registrationId = home.id;
            } else if (e.size > 0) {
                register(e, data, what);
            }
            Exposure old;
            synchronized (this) {
                old = exposed.put(key, e);
            }
            if (old != null) {
                LOG.log(Level.DEBUG, () -> "ucx server: " + what + " exposed again; replacing the earlier registration");
                deregister(List.of(old));
            }
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    private void register(Exposure e, MemorySegment data, String what) {
        if (!settings.copyToUcxMemory()) {
            registerInPlace(e, data.address(), UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST, what);
            return;
        }
        try {
            loop.call(() -> {
                UcpMemory m = loop.context().memoryMap(new UcpMemMapParams().allocate().setLength(e.size));
                e.memory = m;
                e.address = m.getAddress();
                e.rkey = toBytes(m.getRemoteKeyBuffer());
                return null;
            }, LOOP_CALL_TIMEOUT_MS);
            // Views of at most 1 GiB: ByteBuffer capacities are ints.
            for (long off = 0; off < e.size; off += 1L << 30) {
                int len = (int) Math.min(1L << 30, e.size - off);
                MemorySegment.copy(data, off, MemorySegment.ofBuffer(UcxUtils.getByteBufferView(e.address + off, len)), 0, len);
            }
        } catch (RuntimeException ex) {
            if (e.memory != null) {
                deregister(List.of(e));
            }
            if (ex instanceof ViperException ve) {
                throw ve;
            }
            throw new RetriableViperException(ViperException.Reason.TRANSFER, "ucx server: cannot allocate UCX memory for "
                    + e.size + " bytes of " + what + ": " + UcxNative.oneLine(String.valueOf(ex.getMessage())), ex);
        }
    }

    /** Registers {@code e.size} bytes at {@code address} of {@code memoryType} where they are, on the loop thread. */
    private void registerInPlace(Exposure e, long address, int memoryType, String what) {
        try {
            loop.call(() -> {
                UcpMemMapParams params = new UcpMemMapParams().setAddress(address).setLength(e.size);
                // Host memory is left to UCX's own detection, as before the GPU mode existed.
                UcpMemory m = loop.context().memoryMap(memoryType == UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST ? params : params.setMemoryType(memoryType));
                e.memory = m;
                e.address = m.getAddress();
                e.rkey = toBytes(m.getRemoteKeyBuffer());
                return null;
            }, LOOP_CALL_TIMEOUT_MS);
        } catch (RuntimeException ex) {
            if (ex instanceof ViperException ve) {
                throw ve;
            }
            throw new RetriableViperException(ViperException.Reason.TRANSFER, "ucx server: cannot register " + e.size + " bytes of " + what + ": "
                    + UcxNative.oneLine(String.valueOf(ex.getMessage())), ex);
        }
    }

    @Override
    public void withdraw(StagedCheckpoint staged) {
        Key key = new Key(staged.model(), staged.version());
        Exposure e;
        lifecycle.readLock().lock();
        try {
            synchronized (this) {
                e = exposed.get(key);
                if (e == null || e.staged != staged) {
                    return;
                }
                exposed.remove(key);
            }
            deregister(List.of(e));
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /** Deregisters on the loop thread and waits; a closed loop has released everything already. */
    private void deregister(List<Exposure> list) {
        if (list.stream().noneMatch(e -> e.owned && e.memory != null)) {
            return; // nothing registered of its own (in a staging buffer UCX allocated): no hand-off to the loop
        }
        try {
            loop.call(() -> {
                list.forEach(UcxServer::deregisterInLoop);
                return null;
            }, LOOP_CALL_TIMEOUT_MS);
        } catch (ViperClosedException | RetriableViperException e) {
            LOG.log(Level.DEBUG, () -> "ucx server: deregistration skipped: " + e.getMessage());
        }
    }

    private static void deregisterInLoop(Exposure e) {
        if (e.owned && e.memory != null) {
            try {
                e.memory.deregister();
            } catch (RuntimeException ex) {
                LOG.log(Level.WARNING, "ucx server: deregistering " + e.size + " bytes failed: " + ex.getMessage(), ex);
            }
            e.memory = null;
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new ViperClosedException("ucx server " + location.uri() + " is closed");
        }
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
                    LOG.log(Level.WARNING, "ucx server " + location.uri() + ": accept failed, no longer serving: " + e.getMessage(), e);
                }
                return;
            }
            if (!limits.peers().admit(remote.getAddress())) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // refusing anyway
                }
                continue;
            }
            Connection c = new Connection(s, remote);
            connections.add(c);
            synchronized (this) {
                if (closed) {
                    connections.remove(c);
                    c.closeSocket();
                    limits.peers().release(c.address);
                    continue;
                }
            }
            // A platform thread: consumers keep their control connections open between reads, and a
            // blocked platform thread wakes one hand-off sooner than a virtual one (no poller).
            Thread.ofPlatform().daemon().name("viper-ucx-control-" + c.peer).start(() -> serve(c));
        }
    }

    /**
     * One control connection: the authentication handshake, the magic, then requests until the
     * consumer closes. Every frame must arrive whole within {@code viper.limits.idle.ms}, or, while
     * the connection holds leases (the consumer is reading), within the transfer timeout plus 10 s.
     */
    private void serve(Connection c) {
        try (FrameChannel ch = FrameChannel.of(c.socket, limits.frames(1))) {
            c.channel = ch;
            if (isClosed()) {
                return; // close() may have missed the channel
            }
            limits.handshake(ch, c.peer); // a peer without the key gets nothing else
            ByteBuffer magic = ByteBuffer.allocate(4);
            ch.readFully(magic, limits.requestDeadline());
            if (magic.getInt(0) != ControlProtocol.MAGIC) {
                throw new ControlProtocol.ProtocolException("not a Viper ucx control connection (magic 0x" + Integer.toHexString(magic.getInt(0)) + ")");
            }
            while (true) {
                ByteBuffer frame;
                try {
                    frame = ch.readFrame(c.leases.isEmpty() ? limits.requestDeadline() : ConnectionGate.deadlineAfter(settings.transferTimeoutMs() + 10_000));
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
                            throw new ControlProtocol.ProtocolException("RELEASE of lease " + id + " that this connection does not hold");
                        }
                        closeQuietly(lease);
                        yield ControlProtocol.released(id);
                    }
                    default -> throw new ControlProtocol.ProtocolException("unexpected frame " + ControlProtocol.typeName(type));
                };
                if (reply != null) {
                    ch.write(limits.requestDeadline(), reply);
                }
            }
        } catch (ControlProtocol.ProtocolException | java.net.ProtocolException | Handshake.Refused e) {
            LOG.log(Level.WARNING, "ucx server " + location.uri() + ": closing control connection from " + c.peer + ": " + e.getMessage());
        } catch (SocketTimeoutException e) {
            LOG.log(Level.WARNING, "ucx server " + location.uri() + ": closing control connection from " + c.peer + ": " + e.getMessage());
        } catch (IOException e) {
            if (!isClosed()) {
                LOG.log(Level.DEBUG, () -> "ucx server " + location.uri() + ": control connection from " + c.peer + " broke: " + e.getMessage());
            }
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "ucx server " + location.uri() + ": closing control connection from " + c.peer + ": " + e, e);
        } finally {
            c.closeSocket();
            c.closeLeases();
            connections.remove(c);
            limits.peers().release(c.address);
        }
    }

    private synchronized boolean isClosed() {
        return closed;
    }

    /** A lease taken on an exposure, or why none was ({@code lease} null). */
    private record Taken(Exposure exposure, ReadLease lease, String refusal) {
    }

    /** Takes a read lease on the exposure of {@code model} v{@code version}, if it is exposed and not recycled. */
    private Taken take(String model, long version) {
        Key key = new Key(model, version);
        String what = model + " v" + version;
        Exposure e;
        synchronized (this) {
            if (closed) {
                return new Taken(null, null, "producer is shutting down");
            }
            e = exposed.get(key);
        }
        if (e == null) {
            return new Taken(null, null, what + " is not served here");
        }
        ReadLease lease = e.staged.tryLease();
        if (lease == null) {
            return new Taken(null, null, what + " was recycled");
        }
        synchronized (this) {
            if (closed || exposed.get(key) != e) {
                closeQuietly(lease);
                return new Taken(null, null, closed ? "producer is shutting down" : what + " was withdrawn");
            }
        }
        return new Taken(e, lease, null);
    }

    private ByteBuffer lease(Connection c, ControlProtocol.LeaseRequest req) throws ControlProtocol.ProtocolException {
        if (c.leases.size() >= MAX_LEASES_PER_CONNECTION) {
            throw new ControlProtocol.ProtocolException("more than " + MAX_LEASES_PER_CONNECTION + " open leases on one connection");
        }
        Taken t = take(req.model(), req.version());
        if (t.lease() == null) {
            return ControlProtocol.notAvailable(t.refusal());
        }
        Exposure e = t.exposure();
        long id;
        synchronized (this) {
            id = leaseIds.incrementAndGet();
            c.leases.put(id, t.lease());
        }
        return ControlProtocol.grant(id, e.registrationId, e.address, e.size, e.size == 0 ? new byte[0] : workerAddress, e.rkey);
    }

    /**
     * A whole small read: takes the lease, copies DATA and the bytes of the ranges from the staged
     * memory into a frame, closes the lease and writes the frame (so the lease is closed before the
     * consumer can read the answer); returns null once written, or NOT_AVAILABLE to send.
     */
    private ByteBuffer leaseRead(ControlProtocol.LeaseReadRequest req, FrameChannel out) throws IOException, ControlProtocol.ProtocolException {
        Taken t = take(req.model(), req.version());
        if (t.lease() == null) {
            return ControlProtocol.notAvailable(t.refusal());
        }
        byte[] bytes;
        try (ReadLease lease = t.lease()) {
            MemorySegment data = t.exposure().staged.data();
            long size = data.byteSize();
            for (int i = 0; i < req.offsets().length; i++) {
                if (req.offsets()[i] > size || req.lengths()[i] > size - req.offsets()[i]) {
                    throw new ControlProtocol.ProtocolException("LEASE_READ range " + req.offsets()[i] + "+" + req.lengths()[i]
                            + " lies outside the " + size + " bytes of " + req.model() + " v" + req.version());
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
     * Stops serving: closes the control channel and every connection (and so every lease), then,
     * after a grace period of one second if leases were open, unmaps the memory and closes UCX.
     */
    @Override
    public void close() {
        List<Exposure> all;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        // Waits for exposes and withdraws under way; later ones see the server closed.
        lifecycle.writeLock().lock();
        try {
            synchronized (this) {
                all = new ArrayList<>(exposed.values());
                exposed.clear();
            }
        } finally {
            lifecycle.writeLock().unlock();
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
        if (leased && all.stream().anyMatch(e -> e.size > 0)) {
            try {
                Thread.sleep(UNMAP_GRACE_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            acceptor.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        List<Allocation> allocs;
        synchronized (this) {
            allocs = new ArrayList<>(allocations);
            allocations.clear();
        }
        loop.close(() -> {
            all.forEach(UcxServer::deregisterInLoop);
            for (Allocation a : allocs) {
                UcpMemory m = a.memory;
                a.memory = null;
                if (m != null) {
                    m.deregister();
                }
            }
        }, LOOP_CALL_TIMEOUT_MS);
    }

    private static void closeQuietly(ReadLease lease) {
        try {
            lease.close();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "ucx server: closing a read lease failed: " + e.getMessage(), e);
        }
    }
}
