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
import io.viper.transfer.ucx.UcxConfig;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Deque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.lang.System.Logger.Level;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;

/**
 * Consumer side of the ucx transport: one UCP context and worker driven by one progress thread
 * ({@link WorkerLoop}), endpoints cached per producer worker address.
 *
 * <p>{@link #read} may be called from many threads at once. Each read takes a control connection
 * to the producer (kept open between reads, up to {@link #MAX_IDLE_PER_PRODUCER} idle ones per
 * producer), takes a lease, hands the RDMA GETs (ranges split into chunks, a few in flight) to the
 * progress thread, and waits on the control connection's selector, so that a producer that goes away
 * ends the wait at once; each completed GET is reported to the caller's {@link Arrivals} on the
 * progress thread; then it releases the lease. A read of at most {@code viper.ucx.inline.bytes}
 * takes one round trip instead: LEASE_READ, answered with the bytes on the control connection. The
 * destination segment stays owned by the caller; it is written only by UCX (or the reading thread)
 * during the read, and never after {@code read} returns.
 *
 * <p>Nothing a producer sends reaches UCX unless the producer is trusted ({@link ProducerTrust}): it
 * proved the consumer's secret in the handshake, or, without secrets, it runs as this user on this host.
 *
 * <p>Endpoints are created without peer error handling: with it, UCX 1.13 picks TCP instead of
 * shared memory between processes on one host. A dead producer is detected on the control channel.
 * The destination is not registered with UCX: GETs from the producer's UCX-allocated shared memory
 * copy into unregistered memory just as fast (measured), and UCX registers on its own where a
 * transport needs it.
 */
public final class UcxClient implements TransportClient.ArrivalReporting {
    private static final System.Logger LOG = System.getLogger(UcxClient.class.getName());
    private static final int MAX_ENDPOINTS = 64;
    private static final long ABORT_GRACE_MS = 2_000;
    /**
     * Most bytes one copy from a producer's mapped memory moves. The reader's copy
     * ({@link Arrivals#copy}) spreads each call over its threads, which meet at the call's end: in one
     * process here, 1 GiB copied and checked in calls of 8 MiB took 85 ms, in calls of 64 MiB 76 ms.
     * The deadline is checked between calls, every few milliseconds.
     */
    static final long MAPPED_COPY_BYTES = 64L << 20;
    private static final long CLOSE_TIMEOUT_MS = 10_000;
    /** Cached rkeys unused this long are dropped (at the next read), detaching the producer's memory. */
    private static final long RKEY_IDLE_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** Idle control connections kept per producer address. */
    static final int MAX_IDLE_PER_PRODUCER = 8;

    private final UcxSettings settings;
    private final ClientAuth auth;
    private final ProducerTrust trust;
    private final UcxMemoryMode mode;
    private final WorkerLoop loop;
    private volatile boolean closed;
    /** Loop thread only: producer worker address -> endpoint, least recently used first. */
    private final LinkedHashMap<ByteBuffer, Peer> peers = new LinkedHashMap<>(16, 0.75f, true);
    /** Loop thread only: endpoints being closed. */
    private final List<UcpRequest> closing = new ArrayList<>();
    /** Idle control connections per producer address, most recently used first. */
    private final Map<InetSocketAddress, Deque<ControlChannel>> idle = new ConcurrentHashMap<>();

    /** An endpoint to one producer worker and the remote keys unpacked on it; loop thread only. */
    private static final class Peer {
        final UcpEndpoint endpoint;
        /** Exposure id -> unpacked rkey, least recently used first. */
        final LinkedHashMap<Long, RemoteKey> keys = new LinkedHashMap<>(8, 0.75f, true);
        int users;
        boolean evicted;
        boolean closed;

        Peer(UcpEndpoint endpoint) {
            this.endpoint = endpoint;
        }
    }

    /**
     * An unpacked rkey. Unpacking one attaches the producer's shared memory, and the first touch of
     * each page faults, so reads of a version already read reuse it. Loop thread only.
     */
    private static final class RemoteKey {
        final UcpRemoteKey key;
        final byte[] packed;
        final boolean cached;
        int users;
        long lastUsedNanos;

        RemoteKey(UcpRemoteKey key, byte[] packed, boolean cached) {
            this.key = key;
            this.packed = packed;
            this.cached = cached;
        }

        void destroy() {
            try {
                key.close();
            } catch (RuntimeException e) {
                LOG.log(Level.DEBUG, "ucx client: destroying an rkey failed", e);
            }
        }
    }

    private UcxClient(UcxSettings settings, ClientAuth auth, ProducerTrust trust, UcxMemoryMode mode, WorkerLoop loop) {
        this.settings = settings;
        this.auth = auth;
        this.trust = trust;
        this.mode = mode;
        this.loop = loop;
    }

    /** Starts the consumer's UCX context, worker and progress thread. */
    public static UcxClient open(ViperConfig config) {
        return open(config, UcxMemoryMode.HOST);
    }

    /** As {@link #open(ViperConfig)}, for locations of {@code mode}'s scheme; its GPU mode reads into GPU memory too. */
    public static UcxClient open(ViperConfig config, UcxMemoryMode mode) {
        UcxSettings settings = UcxSettings.from(config);
        ClientAuth auth = ClientAuth.of(config, Role.CONSUMER);
        try {
            return new UcxClient(settings, auth, ProducerTrust.of(config, auth), mode, new WorkerLoop("viper-" + mode.scheme() + "-client"));
        } catch (RuntimeException | LinkageError e) {
            throw new ViperUnsupportedException("ucx client: cannot start UCX: " + UcxNative.oneLine(String.valueOf(e.getMessage())), e);
        }
    }

    /** Reports each GET as it completes (on the progress thread), an inline read's ranges as they are read. */
    @Override
    public void read(Manifest manifest, Location location, List<ByteRange> ranges, MemorySegment destination, Arrivals arrivals) {
        requireArguments(manifest, location, ranges, destination);
        String what = manifest.model() + " v" + manifest.version();
        if (destination.isReadOnly()) {
            throw new ViperConfigException(mode.scheme() + " read of " + what + ": destination segment is read-only");
        }
        if (!destination.isNative()) {
            throw new ViperConfigException(mode.scheme() + " read of " + what + ": destination segment must be native (off-heap) memory");
        }
        Plan plan = plan(what, manifest.totalBytes(), ranges, destination.address(), destination.byteSize());
        readInto(manifest, location, plan, inline(ranges) ? new Inline(ranges, destination) : null, arrivals);
    }

    /** Whether {@code ranges} are few and small enough to come back on the control connection. */
    private boolean inline(List<ByteRange> ranges) {
        long total = 0;
        for (ByteRange r : ranges) {
            total += r.length();
        }
        return !mode.device() && total <= Math.min(settings.inlineBytes(), ControlProtocol.MAX_INLINE) && ranges.size() <= ControlProtocol.MAX_INLINE_RANGES;
    }

    /** A read answered on the control connection: its ranges and the caller's destination. */
    private record Inline(List<ByteRange> ranges, MemorySegment destination) {
    }

    /**
     * In the GPU mode ({@code ucx-cuda}): GETs straight into {@code destination}'s GPU memory, which
     * UCX recognises as CUDA memory; the host mode refuses, like every host transport.
     */
    @Override
    public void readToDevice(Manifest manifest, Location location, List<ByteRange> ranges, DeviceBuffer destination) {
        if (!mode.device()) {
            ArrivalReporting.super.readToDevice(manifest, location, ranges, destination);
            return;
        }
        requireArguments(manifest, location, ranges, destination);
        String what = manifest.model() + " v" + manifest.version();
        readInto(manifest, location, plan(what, manifest.totalBytes(), ranges, destination.devicePointer(), destination.byteSize()), null,
                Arrivals.NONE);
    }

    private void requireArguments(Manifest manifest, Location location, List<ByteRange> ranges, Object destination) {
        if (manifest == null || location == null || ranges == null || destination == null) {
            throw new ViperConfigException(mode.scheme() + " read: manifest, location, ranges and destination must not be null");
        }
        if (!location.scheme().equals(mode.scheme())) {
            throw new ViperConfigException(mode.scheme() + " read: location " + location.uri() + " is not a " + mode.scheme() + ":// location");
        }
    }

    private void readInto(Manifest manifest, Location location, Plan plan, Inline inline, Arrivals arrivals) {
        InetSocketAddress address = HostPort.parse(location.uri(), mode.scheme(), false).unresolved();
        String what = manifest.model() + " v" + manifest.version();
        if (closed) {
            throw new ViperClosedException("ucx client is closed");
        }
        String peer = "ucx " + location.uri();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(settings.transferTimeoutMs());
        for (int attempt = 1; ; attempt++) {
            ControlChannel control = takeIdle(address);
            boolean reused = control != null;
            if (control == null) {
                trust.check(address, peer); // a kept connection was checked when it was opened
                control = ControlChannel.connect(peer, address, settings.connectTimeoutMs(), deadline, auth.attempt(mode.scheme(), peer));
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
                throw new RetriableViperException(ViperException.Reason.TRANSFER, peer + ": control protocol error: " + e.getMessage(), e);
            } catch (RetriableViperException e) {
                if (reused && !answered[0] && attempt == 1 && !closed) {
                    // A kept connection the producer closed while it was idle: try once on a fresh one.
                    LOG.log(Level.DEBUG, () -> peer + ": kept control connection failed (" + e.getMessage() + "), reconnecting");
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

    /** LEASE, GRANT, the RDMA GETs, RELEASE and RELEASED: the lease is closed when the read returns. */
    private void readByGets(String peer, String what, ControlChannel control, Manifest manifest, Plan plan, Arrivals arrivals, long deadline,
                            boolean[] answered) throws ControlProtocol.ProtocolException {
        control.send(ControlProtocol.lease(manifest.model(), manifest.version()), deadline);
        ControlChannel.Frame reply = control.receive(deadline);
        answered[0] = true;
        ControlProtocol.Grant grant = switch (reply.type()) {
            case ControlProtocol.GRANT -> ControlProtocol.parseGrant(reply.payload());
            case ControlProtocol.NOT_AVAILABLE -> throw new ViperNotFoundException(
                    peer + ": " + what + " not available: " + ControlProtocol.parseNotAvailable(reply.payload()));
            default -> throw new ControlProtocol.ProtocolException("expected GRANT or NOT_AVAILABLE, got " + ControlProtocol.typeName(reply.type()));
        };
        if (grant.size() != manifest.totalBytes()) {
            throw new RetriableViperException(ViperException.Reason.TRANSFER, peer + ": producer serves " + grant.size()
                    + " bytes for " + what + " but the manifest says " + manifest.totalBytes());
        }
        if (plan.count() > 0) {
            transfer(peer, control, grant, plan, arrivals, deadline);
        }
        control.send(ControlProtocol.release(grant.leaseId()), deadline);
        ControlChannel.Frame released = control.receive(deadline);
        if (released.type() != ControlProtocol.RELEASED || ControlProtocol.parseLeaseId(released.payload(), "RELEASED") != grant.leaseId()) {
            throw new ControlProtocol.ProtocolException("expected RELEASED of lease " + grant.leaseId() + ", got " + ControlProtocol.typeName(released.type()));
        }
    }

    /** LEASE_READ, answered with DATA and the bytes (the producer closes the lease itself). */
    private void readInline(String peer, String what, ControlChannel control, Manifest manifest, Inline inline, Arrivals arrivals, long deadline,
                            boolean[] answered) throws ControlProtocol.ProtocolException {
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
            throw new ViperNotFoundException(peer + ": " + what + " not available: " + ControlProtocol.parseNotAvailable(reply.payload()));
        }
        if (reply.type() != ControlProtocol.DATA) {
            throw new ControlProtocol.ProtocolException("expected DATA or NOT_AVAILABLE, got " + ControlProtocol.typeName(reply.type()));
        }
        long[] header = ControlProtocol.parseData(reply.payload());
        if (header[0] != manifest.totalBytes()) {
            // The bytes that follow are of another checkpoint: the connection is not reused (not clean).
            throw new RetriableViperException(ViperException.Reason.TRANSFER, peer + ": producer serves " + header[0]
                    + " bytes for " + what + " but the manifest says " + manifest.totalBytes());
        }
        if (header[1] != total) {
            throw new ControlProtocol.ProtocolException("DATA announces " + header[1] + " bytes, requested " + total);
        }
        for (ByteRange r : ranges) {
            control.readFully(inline.destination().asSlice(r.destinationOffset(), r.length()).asByteBuffer(), deadline);
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
     * The GETs of one read: chunk i copies {@code length[i]} bytes from remote offset to local
     * address, which is {@code destinationOffset[i]} bytes into the destination.
     */
    private record Plan(long[] remoteOffset, long[] localAddress, long[] destinationOffset, long[] length) {
        int count() {
            return length.length;
        }
    }

    /** The GETs that copy {@code ranges} into {@code capacity} bytes of memory at {@code base} (host or GPU). */
    private Plan plan(String what, long total, List<ByteRange> ranges, long base, long capacity) {
        long chunk = settings.chunkBytes();
        long count = 0;
        for (ByteRange r : ranges) {
            if (r == null) {
                throw new ViperConfigException("ucx read of " + what + ": null byte range");
            }
            if (r.length() > total - r.sourceOffset() || r.sourceOffset() > total) {
                throw new ViperConfigException("ucx read of " + what + ": range " + r.sourceOffset() + "+" + r.length()
                        + " exceeds the checkpoint's " + total + " bytes");
            }
            if (r.length() > capacity - r.destinationOffset() || r.destinationOffset() > capacity) {
                throw new ViperConfigException("ucx read of " + what + ": range to " + r.destinationOffset() + "+" + r.length()
                        + " exceeds the destination's " + capacity + " bytes");
            }
            count += (r.length() + chunk - 1) / chunk;
        }
        if (count > Integer.MAX_VALUE - 8) {
            throw new ViperConfigException("ucx read of " + what + ": too many chunks; raise " + UcxConfig.CHUNK_BYTES.name());
        }
        int n = (int) count;
        long[] remote = new long[n];
        long[] local = new long[n];
        long[] destination = new long[n];
        long[] length = new long[n];
        int i = 0;
        for (ByteRange r : ranges) {
            for (long done = 0; done < r.length(); done += chunk) {
                remote[i] = r.sourceOffset() + done;
                destination[i] = r.destinationOffset() + done;
                local[i] = base + destination[i];
                length[i] = Math.min(chunk, r.length() - done);
                i++;
            }
        }
        return new Plan(remote, local, destination, length);
    }

    private void transfer(String peer, ControlChannel control, ControlProtocol.Grant grant, Plan plan, Arrivals arrivals, long deadline)
            throws ControlProtocol.ProtocolException {
        Transfer t = new Transfer(peer, grant, plan, arrivals, control::wakeup);
        // UCX 1.13 crashes the process when unpacking an rkey whose shared memory is gone; a producer
        // that closes keeps its memory mapped for a grace period after closing its connections.
        control.checkOpen();
        loop.execute(t::start);
        try {
            control.awaitWhile(() -> !t.done.isDone() && t.mappedAt == 0, deadline);
            if (!t.done.isDone() && t.mappedAt != 0) {
                copyMapped(t, deadline);
                loop.execute(t::endMapped);
            }
            control.awaitWhile(() -> !t.done.isDone(), deadline);
        } finally {
            if (!t.done.isDone()) {
                abort(t);
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
     * The read of a producer on this host whose memory UCX mapped here ({@link RkeyPointer}): copies
     * every chunk of the plan straight from it with the reader's {@link Arrivals#copy} (the calling
     * thread, and the threads a verifier adds to copy and check at once), consecutive chunks together
     * up to {@link #MAPPED_COPY_BYTES}. The key and the
     * lease stay held until the transfer ends, so the memory stays mapped and the producer's. As for
     * GETs, only a trusted producer's grant gets here ({@link ProducerTrust}): its address and size
     * are taken as they are.
     */
    private static void copyMapped(Transfer t, long deadline) {
        Plan plan = t.plan;
        MemorySegment remote = MemorySegment.ofAddress(t.mappedAt).reinterpret(t.grant.size());
        int i = 0;
        while (i < plan.count()) {
            if (System.nanoTime() - deadline > 0) {
                throw new RetriableViperException(ViperException.Reason.TRANSFER, t.peer + ": reading mapped memory timed out");
            }
            int j = i + 1;
            long len = plan.length()[i];
            while (j < plan.count() && len + plan.length()[j] <= MAPPED_COPY_BYTES
                    && plan.remoteOffset()[j] == plan.remoteOffset()[i] + len && plan.localAddress()[j] == plan.localAddress()[i] + len) {
                len += plan.length()[j];
                j++;
            }
            try {
                // The reader's copy: a verifier checks each piece as it copies it.
                t.arrivals.copy(remote.asSlice(plan.remoteOffset()[i], len), MemorySegment.ofAddress(plan.localAddress()[i]).reinterpret(len),
                        plan.destinationOffset()[i]);
            } catch (RuntimeException e) {
                throw new RetriableViperException(ViperException.Reason.TRANSFER, t.peer + ": the reader's copy failed: " + e);
            }
            i = j;
        }
    }

    /**
     * Stops issuing GETs and waits for those in flight, so that nothing writes into the caller's
     * destination after {@code read} returns. GETs complete on their own once issued (shared memory
     * copies, RDMA); those that do not within a grace period are abandoned and logged.
     */
    private void abort(Transfer t) {
        if (awaitAfter(() -> t.abort("read abandoned"), t)) {
            return;
        }
        try {
            loop.execute(t::abandon);
        } catch (ViperClosedException closedLoop) {
            // The loop is closing and takes the endpoints with it.
        }
        LOG.log(Level.ERROR, t.peer + ": RDMA reads still outstanding " + ABORT_GRACE_MS + " ms after an abandoned read; its destination may still be written");
    }

    private boolean awaitAfter(Runnable action, Transfer t) {
        try {
            loop.execute(action);
        } catch (ViperClosedException closedLoop) {
            // The loop is closing: its cleanup force-closes every endpoint.
        }
        try {
            t.done.get(ABORT_GRACE_MS, TimeUnit.MILLISECONDS);
            return true;
        } catch (ExecutionException e) {
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return t.done.isDone();
        }
    }

    /** One read's GETs, driven on the loop thread. */
    private final class Transfer {
        final String peer;
        final ControlProtocol.Grant grant;
        final Plan plan;
        final Arrivals arrivals;
        final Runnable wake;
        final CompletableFuture<Void> done = new CompletableFuture<>();
        Peer target;
        RemoteKey rkey;
        /** The producer's memory mapped here ({@link RkeyPointer}), set by {@link #start}; 0: the GETs move the bytes. */
        volatile long mappedAt;
        int next;
        int inFlight;
        boolean aborted;
        boolean pumping;
        boolean busy;
        boolean finished;
        String failure;

        Transfer(String peer, ControlProtocol.Grant grant, Plan plan, Arrivals arrivals, Runnable wake) {
            this.peer = peer;
            this.grant = grant;
            this.plan = plan;
            this.arrivals = arrivals;
            this.wake = wake;
        }

        /** GET {@code index}'s completion; counts once even if jucx reports it twice. */
        final class Get extends UcxCallback {
            final int index;
            boolean completed;

            Get(int index) {
                this.index = index;
            }

            @Override
            public void onSuccess(UcpRequest request) {
                complete(null);
            }

            @Override
            public void onError(int status, String message) {
                complete("RDMA read failed (UCS status " + status + "): " + message);
            }

            void complete(String error) {
                if (completed) {
                    return;
                }
                completed = true;
                inFlight--;
                if (error != null) {
                    fail(error);
                } else if (!aborted) {
                    try {
                        arrivals.arrived(plan.destinationOffset()[index], plan.length()[index]);
                    } catch (RuntimeException e) {
                        fail("the reader's arrival callback failed: " + e);
                    }
                }
                pump();
            }
        }

        void start() {
            try {
                if (closed) {
                    throw new ViperClosedException("ucx client is closed");
                }
                target = acquire(grant.workerAddress());
                rkey = remoteKey(target, grant);
                if (!mode.device() && settings.mapped() && plan.count() > 0) {
                    long at = RkeyPointer.localAddress(rkey.key, grant.address());
                    if (at != 0) {
                        mappedAt = at; // the reader copies; endMapped() ends the transfer
                        wake.run();
                        return;
                    }
                }
                loop.busyBegin();
                busy = true;
            } catch (RuntimeException e) {
                fail("cannot reach the producer's UCX worker: " + UcxNative.oneLine(String.valueOf(e.getMessage())));
            }
            pump();
        }

        /** The reader copied every chunk from the mapped memory: releases the key and the endpoint. */
        void endMapped() {
            if (!finished) {
                finish();
            }
        }

        void pump() {
            if (pumping || finished) {
                return;
            }
            pumping = true;
            try {
                while (!aborted && inFlight < settings.inFlight() && next < plan.count()) {
                    int i = next++;
                    Get cb = new Get(i);
                    inFlight++;
                    try {
                        target.endpoint.getNonBlocking(grant.address() + plan.remoteOffset()[i], rkey.key, plan.localAddress()[i], plan.length()[i], cb);
                    } catch (RuntimeException e) {
                        cb.complete("RDMA read failed: " + UcxNative.oneLine(String.valueOf(e.getMessage())));
                    }
                }
            } finally {
                pumping = false;
            }
            if (inFlight == 0 && (aborted || next == plan.count())) {
                finish();
            }
        }

        void fail(String why) {
            if (failure == null) {
                failure = why;
            }
            aborted = true;
        }

        void abort(String why) {
            if (!done.isDone()) {
                fail(why);
                pump();
            }
        }

        /**
         * Gives up on GETs that did not complete after an abort (UCX cannot cancel RMA, and without
         * peer error handling it cannot force-close the endpoint): stops busy-polling for them and
         * takes the endpoint out of the cache. Their completions, if they come, are still counted.
         */
        void abandon() {
            if (finished) {
                return;
            }
            if (target != null) {
                evict(target);
            }
            if (busy) {
                busy = false;
                loop.busyEnd();
            }
        }

        private void finish() {
            finished = true;
            if (target != null) {
                if (rkey != null) {
                    releaseKey(target, rkey);
                    rkey = null;
                }
                target.users--;
                if (failure != null) {
                    evict(target);
                }
                closeIfIdle(target);
            }
            if (busy) {
                busy = false;
                loop.busyEnd();
            }
            if (failure == null) {
                done.complete(null);
            } else {
                done.completeExceptionally(new RetriableViperException(ViperException.Reason.TRANSFER, peer + ": " + failure));
            }
            try {
                wake.run();
            } catch (RuntimeException | Error e) {
                LOG.log(Level.DEBUG, "ucx client: waking a reader failed", e);
            }
        }
    }

    private static ByteBuffer direct(byte[] bytes) {
        return ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
    }

    /** Loop thread: the rkey of {@code grant} on {@code p}, unpacked or from the cache, with one more user. */
    private RemoteKey remoteKey(Peer p, ControlProtocol.Grant grant) {
        RemoteKey k = p.keys.get(grant.exposureId());
        if (k == null || !java.util.Arrays.equals(k.packed, grant.rkey())) {
            boolean cache = settings.rkeyCache() > 0 && k == null;
            k = new RemoteKey(p.endpoint.unpackRemoteKey(direct(grant.rkey())), grant.rkey(), cache);
            if (cache) {
                p.keys.put(grant.exposureId(), k);
            }
        }
        k.users++;
        return k;
    }

    /** Loop thread: one user fewer; drops uncached, least recently used and idle keys. */
    private void releaseKey(Peer p, RemoteKey k) {
        k.users--;
        k.lastUsedNanos = System.nanoTime();
        if (!k.cached && k.users == 0) {
            k.destroy();
        }
        trimKeys(p, p.closed ? 0 : settings.rkeyCache());
    }

    private static void trimKeys(Peer p, int keep) {
        long now = System.nanoTime();
        int excess = p.keys.size() - keep;
        for (Iterator<RemoteKey> it = p.keys.values().iterator(); it.hasNext(); ) {
            RemoteKey k = it.next();
            if (k.users == 0 && (excess > 0 || now - k.lastUsedNanos > RKEY_IDLE_NANOS)) {
                it.remove();
                excess--;
                k.destroy();
            }
        }
    }

    /** Loop thread: the cached endpoint to {@code workerAddress}, created if needed, with one more user. */
    private Peer acquire(byte[] workerAddress) {
        ByteBuffer key = ByteBuffer.wrap(workerAddress.clone());
        for (Peer other : peers.values()) {
            trimKeys(other, settings.rkeyCache());
        }
        Peer p = peers.get(key);
        if (p == null) {
            // No peer error handling, on purpose: see the class comment.
            UcpEndpoint ep = loop.worker().newEndpoint(new UcpEndpointParams().setUcpAddress(direct(workerAddress)));
            p = new Peer(ep);
            peers.put(key, p);
            trimCache();
        }
        p.users++;
        return p;
    }

    private void trimCache() {
        Iterator<Map.Entry<ByteBuffer, Peer>> it = peers.entrySet().iterator();
        while (peers.size() > MAX_ENDPOINTS && it.hasNext()) {
            Peer p = it.next().getValue();
            if (p.users == 0) {
                it.remove();
                p.evicted = true;
                closeIfIdle(p);
            }
        }
    }

    /** Loop thread: takes {@code p} out of the cache; it closes once its last user is done. */
    private void evict(Peer p) {
        if (!p.evicted) {
            p.evicted = true;
            peers.values().remove(p);
        }
    }

    private void closeIfIdle(Peer p) {
        if (p.evicted && p.users == 0 && !p.closed) {
            p.closed = true;
            trimKeys(p, 0);
            try {
                closing.add(p.endpoint.closeNonBlockingFlush());
            } catch (RuntimeException e) {
                LOG.log(Level.DEBUG, "ucx client: closing an endpoint failed", e);
            }
            closing.removeIf(UcpRequest::isCompleted);
        }
    }

    /**
     * Closes every endpoint (after destroying its rkeys) and waits for that, then closes the worker
     * and the context. Reads still running fail with a retriable error or time out.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Deque<ControlChannel> q : idle.values()) {
            for (ControlChannel c; (c = q.pollFirst()) != null; ) {
                c.close();
            }
        }
        loop.close(() -> {
            for (Peer p : List.copyOf(peers.values())) {
                p.evicted = true;
                if (!p.closed) {
                    p.closed = true;
                    trimKeys(p, 0);
                    try {
                        closing.add(p.endpoint.closeNonBlockingFlush());
                    } catch (RuntimeException e) {
                        LOG.log(Level.DEBUG, "ucx client: closing an endpoint failed", e);
                    }
                }
            }
            peers.clear();
            if (!loop.progressUntil(() -> closing.stream().allMatch(UcpRequest::isCompleted), CLOSE_TIMEOUT_MS / 2)) {
                LOG.log(Level.WARNING, "ucx client: endpoints did not close within " + CLOSE_TIMEOUT_MS / 2 + " ms");
            }
            closing.clear();
        }, CLOSE_TIMEOUT_MS);
    }
}
