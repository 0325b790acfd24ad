package io.viper.transfer.ucx.internal;

import io.viper.ViperConfig;
import io.viper.auth.ClientAuth;
import io.viper.auth.Role;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.errors.ViperUnsupportedException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.net.HostPort;
import io.viper.spi.ByteRange;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.TransportClient;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.TimeUnit;

/**
 * Consumer side of the ucx transport: one UCP context and worker driven by one progress thread ({@link WorkerLoop}),
 * endpoints cached per producer worker address.
 *
 * <p>{@link #read} may be called from many threads at once. Each read takes a control connection to the producer (kept
 * open between reads, up to {@link #MAX_IDLE_PER_PRODUCER} idle ones per producer), takes a lease, hands the RDMA GETs
 * (ranges split into chunks, a few in flight) to the progress thread, and waits on the control connection's selector,
 * so that a producer that goes away ends the wait at once; each completed GET is reported to the caller's
 * {@link Arrivals} on the progress thread; then it releases the lease. A read of at most {@code viper.ucx.inline.bytes}
 * takes one round trip instead: LEASE_READ, answered with the bytes on the control connection. The destination segment
 * stays owned by the caller; it is written only by UCX (or the reading thread) during the read, and never after
 * {@code read} returns.
 *
 * <p>Nothing a producer sends reaches UCX unless the producer is trusted ({@link ProducerTrust}): it proved the
 * consumer's secret in the handshake, or, without secrets, it runs as this user on this host.
 *
 * <p>Endpoints are created without peer error handling: with it, UCX 1.13 picks TCP instead of shared memory between
 * processes on one host. A dead producer is detected on the control channel. The destination is not registered with
 * UCX: GETs from the producer's UCX-allocated shared memory copy into unregistered memory just as fast (measured), and
 * UCX registers on its own where a transport needs it.
 */
public final class UcxClient implements TransportClient.ArrivalReporting {
    private static final System.Logger LOG = System.getLogger(UcxClient.class.getName());
    private static final long CLOSE_TIMEOUT_MS = 10_000;
    /** Idle control connections kept per producer address. */
    static final int MAX_IDLE_PER_PRODUCER = 8;

    private final UcxSettings settings;
    private final ClientAuth auth;
    private final ProducerTrust trust;
    private final UcxMemoryMode mode;
    private final WorkerLoop loop;
    private final UcxPeers peers;
    private volatile boolean closed;
    /** Idle control connections per producer address, most recently used first. */
    private final Map<InetSocketAddress, Deque<ControlChannel>> idle = new ConcurrentHashMap<>();

    private UcxClient(UcxSettings settings, ClientAuth auth, ProducerTrust trust, UcxMemoryMode mode, WorkerLoop loop) {
        this.settings = settings;
        this.auth = auth;
        this.trust = trust;
        this.mode = mode;
        this.loop = loop;
        this.peers = new UcxPeers(loop, settings.rkeyCache());
    }

    /** Starts the consumer's UCX context, worker and progress thread. */
    public static UcxClient open(ViperConfig config) {
        return open(config, UcxMemoryMode.HOST);
    }

    /**
     * As {@link #open(ViperConfig)}, for locations of {@code mode}'s scheme; its GPU mode reads into GPU memory too.
     */
    public static UcxClient open(ViperConfig config, UcxMemoryMode mode) {
        UcxSettings settings = UcxSettings.from(config);
        ClientAuth auth = ClientAuth.of(config, Role.CONSUMER);
        try {
            return new UcxClient(
                    settings,
                    auth,
                    ProducerTrust.of(config, auth),
                    mode,
                    // UCX's listeners only on the interface of viper.ucx.consumer.bind (loopback by default)
                    new WorkerLoop(
                            "viper-" + mode.scheme() + "-client", UcxNative.serverParams(settings.consumerBind())));
        } catch (RuntimeException | LinkageError e) {
            throw new ViperUnsupportedException(
                    "ucx client: cannot start UCX: " + UcxNative.oneLine(String.valueOf(e.getMessage())), e);
        }
    }

    /** Reports each GET as it completes (on the progress thread), an inline read's ranges as they are read. */
    @Override
    public void read(
            Manifest manifest,
            Location location,
            List<ByteRange> ranges,
            MemorySegment destination,
            Arrivals arrivals) {
        requireArguments(manifest, location, ranges, destination);
        String what = manifest.model() + " v" + manifest.version();
        if (destination.isReadOnly()) {
            throw new ViperConfigException(mode.scheme() + " read of " + what + ": destination segment is read-only");
        }
        if (!destination.isNative()) {
            throw new ViperConfigException(
                    mode.scheme() + " read of " + what + ": destination segment must be native (off-heap) memory");
        }
        ReadPlan plan = ReadPlan.of(
                what,
                manifest.totalBytes(),
                ranges,
                destination.address(),
                destination.byteSize(),
                settings.chunkBytes());
        readInto(manifest, location, plan, inline(ranges) ? new Inline(ranges, destination) : null, arrivals);
    }

    /** Whether {@code ranges} are few and small enough to come back on the control connection. */
    private boolean inline(List<ByteRange> ranges) {
        long total = 0;
        for (ByteRange r : ranges) {
            total += r.length();
        }
        return !mode.device()
                && total <= Math.min(settings.inlineBytes(), ControlProtocol.MAX_INLINE)
                && ranges.size() <= ControlProtocol.MAX_INLINE_RANGES;
    }

    /** A read answered on the control connection: its ranges and the caller's destination. */
    private record Inline(List<ByteRange> ranges, MemorySegment destination) {}

    /**
     * In the GPU mode ({@code ucx-cuda}): GETs straight into {@code destination}'s GPU memory, which UCX recognises as
     * CUDA memory; the host mode refuses, like every host transport.
     */
    @Override
    public void readToDevice(Manifest manifest, Location location, List<ByteRange> ranges, DeviceBuffer destination) {
        if (!mode.device()) {
            ArrivalReporting.super.readToDevice(manifest, location, ranges, destination);
            return;
        }
        requireArguments(manifest, location, ranges, destination);
        String what = manifest.model() + " v" + manifest.version();
        ReadPlan plan = ReadPlan.of(
                what,
                manifest.totalBytes(),
                ranges,
                destination.devicePointer(),
                destination.byteSize(),
                settings.chunkBytes());
        readInto(manifest, location, plan, null, Arrivals.NONE);
    }

    private void requireArguments(Manifest manifest, Location location, List<ByteRange> ranges, Object destination) {
        if (manifest == null || location == null || ranges == null || destination == null) {
            throw new ViperConfigException(
                    mode.scheme() + " read: manifest, location, ranges and destination must not be null");
        }
        if (!location.scheme().equals(mode.scheme())) {
            throw new ViperConfigException(mode.scheme() + " read: location " + location.uri() + " is not a "
                    + mode.scheme() + ":// location");
        }
    }

    private void readInto(Manifest manifest, Location location, ReadPlan plan, Inline inline, Arrivals arrivals) {
        InetSocketAddress address =
                HostPort.parse(location.uri(), mode.scheme(), false).unresolved();
        String what = manifest.model() + " v" + manifest.version();
        if (closed) {
            throw new ViperClosedException("ucx client is closed");
        }
        String peer = "ucx " + location.uri();
        if (inline == null) {
            checkReachable(address, peer);
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(settings.transferTimeoutMs());
        for (int attempt = 1; ; attempt++) {
            ControlChannel control = takeIdle(address);
            boolean reused = control != null;
            if (control == null) {
                trust.check(address, peer); // a kept connection was checked when it was opened
                control = ControlChannel.connect(
                        peer, address, settings.connectTimeoutMs(), deadline, auth.attempt(mode.scheme(), peer), trust);
            }
            boolean[] answered = new boolean[1];
            boolean clean = false;
            try {
                control.checkOpen(); // a kept connection the producer closed meanwhile fails here
                if (inline != null) {
                    readInline(peer, what, control, manifest, inline, arrivals, deadline, answered);
                } else {
                    readByGets(peer, what, control, manifest, plan, arrivals, deadline, answered);
                }
                clean = true;
                return;
            } catch (ViperNotFoundException e) {
                clean = true; // NOT_AVAILABLE leaves the connection ready for the next request
                throw e;
            } catch (ControlProtocol.ProtocolException e) {
                throw new RetriableViperException(
                        ViperException.Reason.TRANSFER, peer + ": control protocol error: " + e.getMessage(), e);
            } catch (RetriableViperException e) {
                if (reused && !answered[0] && attempt == 1 && !closed) {
                    // A kept connection the producer closed while it was idle: try once on a fresh one.
                    LOG.log(
                            Level.DEBUG,
                            () -> peer + ": kept control connection failed (" + e.getMessage() + "), reconnecting");
                    continue;
                }
                throw e;
            } finally {
                if (clean) {
                    keepIdle(address, control);
                } else {
                    control.close();
                }
            }
        }
    }

    /**
     * Refuses, before any lease, a producer on another host when this consumer's UCX uses loopback only
     * ({@code viper.ucx.consumer.bind}): UCX could not reach it, and the message says which key to set.
     */
    private void checkReachable(InetSocketAddress producer, String peer) {
        InetAddress bind = settings.consumerBind();
        InetAddress a = bind.isLoopbackAddress()
                ? new InetSocketAddress(producer.getHostString(), producer.getPort()).getAddress()
                : null;
        if (a == null || a.isLoopbackAddress() || a.isAnyLocalAddress()) {
            return;
        }
        try {
            if (NetworkInterface.getByInetAddress(a) != null) {
                return; // an address of this host: shared memory and loopback reach it
            }
        } catch (SocketException e) {
            return; // cannot tell: UCX says for itself
        }
        throw new ViperConfigException(peer + ": the producer is on another host, but this consumer's UCX uses"
                + " loopback only (viper.ucx.consumer.bind=" + bind.getHostAddress() + "): set"
                + " viper.ucx.consumer.bind to an address of the interface that reaches it, or 0.0.0.0");
    }

    /** LEASE, GRANT, the RDMA GETs, RELEASE and RELEASED: the lease is closed when the read returns. */
    private void readByGets(
            String peer,
            String what,
            ControlChannel control,
            Manifest manifest,
            ReadPlan plan,
            Arrivals arrivals,
            long deadline,
            boolean[] answered)
            throws ControlProtocol.ProtocolException {
        control.send(ControlProtocol.lease(manifest.model(), manifest.version()), deadline);
        ControlChannel.Frame reply = control.receive(deadline);
        answered[0] = true;
        ControlProtocol.Grant grant = switch (reply.type()) {
            case ControlProtocol.GRANT -> ControlProtocol.parseGrant(reply.payload());
            case ControlProtocol.NOT_AVAILABLE ->
                throw new ViperNotFoundException(
                        peer + ": " + what + " not available: " + ControlProtocol.parseNotAvailable(reply.payload()));
            default ->
                throw new ControlProtocol.ProtocolException(
                        "expected GRANT or NOT_AVAILABLE, got " + ControlProtocol.typeName(reply.type()));
        };
        if (grant.size() != manifest.totalBytes()) {
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER,
                    peer + ": producer serves " + grant.size() + " bytes for " + what + " but the manifest says "
                            + manifest.totalBytes());
        }
        if (plan.count() > 0) {
            transfer(peer, control, grant, plan, arrivals, deadline);
        }
        control.send(ControlProtocol.release(grant.leaseId()), deadline);
        ControlChannel.Frame released = control.receive(deadline);
        if (released.type() != ControlProtocol.RELEASED
                || ControlProtocol.parseLeaseId(released.payload(), "RELEASED") != grant.leaseId()) {
            throw new ControlProtocol.ProtocolException("expected RELEASED of lease " + grant.leaseId() + ", got "
                    + ControlProtocol.typeName(released.type()));
        }
    }

    /** LEASE_READ, answered with DATA and the bytes (the producer closes the lease itself). */
    private void readInline(
            String peer,
            String what,
            ControlChannel control,
            Manifest manifest,
            Inline inline,
            Arrivals arrivals,
            long deadline,
            boolean[] answered)
            throws ControlProtocol.ProtocolException {
        List<ByteRange> ranges = inline.ranges();
        long[] offsets = new long[ranges.size()];
        long[] lengths = new long[ranges.size()];
        long total = 0;
        for (int i = 0; i < offsets.length; i++) {
            offsets[i] = ranges.get(i).sourceOffset();
            lengths[i] = ranges.get(i).length();
            total += lengths[i];
        }
        control.send(ControlProtocol.leaseRead(manifest.model(), manifest.version(), offsets, lengths), deadline);
        ControlChannel.Frame reply = control.receive(deadline);
        answered[0] = true;
        if (reply.type() == ControlProtocol.NOT_AVAILABLE) {
            throw new ViperNotFoundException(
                    peer + ": " + what + " not available: " + ControlProtocol.parseNotAvailable(reply.payload()));
        }
        if (reply.type() != ControlProtocol.DATA) {
            throw new ControlProtocol.ProtocolException(
                    "expected DATA or NOT_AVAILABLE, got " + ControlProtocol.typeName(reply.type()));
        }
        long[] header = ControlProtocol.parseData(reply.payload());
        if (header[0] != manifest.totalBytes()) {
            // The bytes that follow are of another checkpoint: the connection is not reused (not clean).
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER,
                    peer + ": producer serves " + header[0] + " bytes for " + what + " but the manifest says "
                            + manifest.totalBytes());
        }
        if (header[1] != total) {
            throw new ControlProtocol.ProtocolException("DATA announces " + header[1] + " bytes, requested " + total);
        }
        for (ByteRange r : ranges) {
            control.readFully(
                    inline.destination()
                            .asSlice(r.destinationOffset(), r.length())
                            .asByteBuffer(),
                    deadline);
            arrivals.arrived(r.destinationOffset(), r.length());
        }
    }

    /** An idle control connection to {@code address}, or null. */
    private ControlChannel takeIdle(InetSocketAddress address) {
        Deque<ControlChannel> q = idle.get(address);
        return q == null ? null : q.pollFirst();
    }

    /** Keeps {@code control} for the next read, or closes it when enough are idle or the client closed. */
    private void keepIdle(InetSocketAddress address, ControlChannel control) {
        Deque<ControlChannel> q = idle.computeIfAbsent(address, a -> new ConcurrentLinkedDeque<>());
        if (closed || q.size() >= MAX_IDLE_PER_PRODUCER) {
            control.close();
            return;
        }
        q.addFirst(control);
        if (closed && q.remove(control)) {
            control.close(); // close() ran concurrently and may have missed it
        }
    }

    /**
     * The GETs of {@code plan} (or the copy from mapped memory), waiting on the control connection so that a producer
     * that goes away ends the wait.
     */
    private void transfer(
            String peer,
            ControlChannel control,
            ControlProtocol.Grant grant,
            ReadPlan plan,
            Arrivals arrivals,
            long deadline)
            throws ControlProtocol.ProtocolException {
        RdmaRead t = new RdmaRead(
                peers,
                loop,
                settings,
                !mode.device() && settings.mapped(),
                peer,
                grant,
                plan,
                arrivals,
                control::wakeup);
        // UCX 1.13 crashes the process when unpacking an rkey whose shared memory is gone; a producer
        // that closes keeps its memory mapped for a grace period after closing its connections.
        control.checkOpen();
        loop.execute(t::start);
        try {
            control.awaitWhile(() -> !t.done.isDone() && t.mappedAt == 0, deadline);
            if (!t.done.isDone() && t.mappedAt != 0) {
                t.copyMapped(deadline);
                loop.execute(t::endMapped);
            }
            control.awaitWhile(() -> !t.done.isDone(), deadline);
        } finally {
            if (!t.done.isDone()) {
                t.abandonAndWait();
            }
        }
        try {
            t.done.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw e;
        }
    }

    /**
     * Closes every endpoint (after destroying its rkeys) and waits for that, then closes the worker and the context.
     * Reads still running fail with a retriable error or time out.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        peers.close();
        for (Deque<ControlChannel> q : idle.values()) {
            for (ControlChannel c; (c = q.pollFirst()) != null; ) {
                c.close();
            }
        }
        loop.close(() -> peers.closeAll(CLOSE_TIMEOUT_MS / 2), CLOSE_TIMEOUT_MS);
    }
}
