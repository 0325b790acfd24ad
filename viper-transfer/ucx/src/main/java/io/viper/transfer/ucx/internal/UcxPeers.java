package io.viper.transfer.ucx.internal;

import io.viper.errors.ViperClosedException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;

/**
 * A {@link UcxClient}'s endpoints, one per producer worker address (at most {@link #MAX_ENDPOINTS}, least recently used
 * dropped first), and the remote keys unpacked on each (up to {@code viper.ucx.rkey.cache} per endpoint, dropped after
 * 30 s unused). Every method runs on the client's loop thread, except {@link #close()}.
 *
 * <p>Endpoints are created without peer error handling: with it, UCX 1.13 picks TCP instead of shared memory between
 * processes on one host. A dead producer is detected on the control channel.
 */
final class UcxPeers {
    private static final System.Logger LOG = System.getLogger(UcxClient.class.getName());
    private static final int MAX_ENDPOINTS = 64;
    /** Cached rkeys unused this long are dropped (at the next read), detaching the producer's memory. */
    private static final long RKEY_IDLE_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final WorkerLoop loop;
    private final int rkeyCache;
    /** Producer worker address -> endpoint, least recently used first. */
    private final LinkedHashMap<ByteBuffer, Peer> peers = new LinkedHashMap<>(16, 0.75f, true);
    /** Endpoints being closed. */
    private final List<UcpRequest> closing = new ArrayList<>();

    private volatile boolean closed;

    /** An endpoint to one producer worker and the remote keys unpacked on it. */
    static final class Peer {
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
     * An unpacked rkey. Unpacking one attaches the producer's shared memory, and the first touch of each page faults,
     * so reads of a version already read reuse it.
     */
    static final class RemoteKey {
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

    /** The endpoints of {@code loop}'s worker, keeping up to {@code rkeyCache} unpacked keys per endpoint. */
    UcxPeers(WorkerLoop loop, int rkeyCache) {
        this.loop = loop;
        this.rkeyCache = rkeyCache;
    }

    private static ByteBuffer direct(byte[] bytes) {
        return ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
    }

    /** The rkey of {@code grant} on {@code p}, unpacked or from the cache, with one more user. */
    RemoteKey remoteKey(Peer p, ControlProtocol.Grant grant) {
        RemoteKey k = p.keys.get(grant.exposureId());
        if (k == null || !Arrays.equals(k.packed, grant.rkey())) {
            boolean cache = rkeyCache > 0 && k == null;
            k = new RemoteKey(p.endpoint.unpackRemoteKey(direct(grant.rkey())), grant.rkey(), cache);
            if (cache) {
                p.keys.put(grant.exposureId(), k);
            }
        }
        k.users++;
        return k;
    }

    /** One user fewer; drops uncached, least recently used and idle keys. */
    void releaseKey(Peer p, RemoteKey k) {
        k.users--;
        k.lastUsedNanos = System.nanoTime();
        if (!k.cached && k.users == 0) {
            k.destroy();
        }
        trimKeys(p, p.closed ? 0 : rkeyCache);
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

    /**
     * The cached endpoint to {@code workerAddress}, created if needed, with one more user; throws once the client
     * closed.
     */
    Peer acquire(byte[] workerAddress) {
        if (closed) {
            throw new ViperClosedException("ucx client is closed");
        }
        ByteBuffer key = ByteBuffer.wrap(workerAddress.clone());
        for (Peer other : peers.values()) {
            trimKeys(other, rkeyCache);
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

    /** Takes {@code p} out of the cache; it closes once its last user is done. */
    void evict(Peer p) {
        if (!p.evicted) {
            p.evicted = true;
            peers.values().remove(p);
        }
    }

    /** Closes {@code p} once it is out of the cache and has no user. */
    void closeIfIdle(Peer p) {
        if (p.evicted && p.users == 0 && !p.closed) {
            closeEndpoint(p);
            closing.removeIf(UcpRequest::isCompleted);
        }
    }

    private void closeEndpoint(Peer p) {
        p.closed = true;
        trimKeys(p, 0);
        try {
            closing.add(p.endpoint.closeNonBlockingFlush());
        } catch (RuntimeException e) {
            LOG.log(Level.DEBUG, "ucx client: closing an endpoint failed", e);
        }
    }

    /** The client closes: reads that have not reached their endpoint yet fail. Any thread. */
    void close() {
        closed = true;
    }

    /** Closes every endpoint (after destroying its rkeys) and waits up to {@code timeoutMs} for that. */
    void closeAll(long timeoutMs) {
        for (Peer p : List.copyOf(peers.values())) {
            p.evicted = true;
            if (!p.closed) {
                closeEndpoint(p);
            }
        }
        peers.clear();
        if (!loop.progressUntil(() -> closing.stream().allMatch(UcpRequest::isCompleted), timeoutMs)) {
            LOG.log(Level.WARNING, "ucx client: endpoints did not close within " + timeoutMs + " ms");
        }
        closing.clear();
    }
}
