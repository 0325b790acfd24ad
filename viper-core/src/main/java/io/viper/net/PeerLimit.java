package io.viper.net;

import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts one server's open connections, per peer address and in all, so that the server can close at once, before
 * reading anything, each connection beyond {@code viper.limits.connections.per.peer}, beyond
 * {@code viper.limits.connections.total}, or beyond {@code viper.limits.connections.unauthenticated} still in the
 * handshake: neither one peer nor a flood from many addresses can take every file descriptor. When the handshake slots
 * are full and the oldest connection in its handshake can be closed (its server gave a way to), that one goes instead
 * of the new one, so that a peer with the key, whose handshake takes a round trip, still gets in while a flood holds
 * the slots. The first refusal per peer is logged as a warning, refusals for the totals at most once per 10 s with
 * their count. Thread-safe; every {@link Admission} {@link #admit} returned is {@linkplain Admission#release()
 * released} once its connection closed.
 */
public final class PeerLimit {
    private static final System.Logger LOG = System.getLogger(PeerLimit.class.getName());
    private static final long LOG_EVERY_NANOS = 10_000_000_000L;

    private final String server;
    private final int perPeer;
    private final int total;
    private final int unauthenticated;
    private final Map<InetAddress, Integer> open = new ConcurrentHashMap<>();
    private final Map<InetAddress, Boolean> warned = new ConcurrentHashMap<>();
    private final AtomicInteger openTotal = new AtomicInteger();
    private final AtomicInteger inHandshake = new AtomicInteger();
    private final ConcurrentLinkedDeque<Admission> handshaking = new ConcurrentLinkedDeque<>();
    private final AtomicLong refusedSinceLog = new AtomicLong();
    private final AtomicLong lastLog = new AtomicLong(System.nanoTime() - LOG_EVERY_NANOS);

    /** The limits of {@code server} (for messages): connections per peer address, in all, and in the handshake. */
    public PeerLimit(String server, int perPeer, int total, int unauthenticated) {
        this.server = server;
        this.perPeer = perPeer;
        this.total = total;
        this.unauthenticated = unauthenticated;
    }

    /** {@code perPeer} connections per peer address, no total. */
    public PeerLimit(String server, int perPeer) {
        this(server, perPeer, Integer.MAX_VALUE, Integer.MAX_VALUE);
    }

    /**
     * Counts a new connection from {@code peer}, in its handshake; null (and nothing counted) when it is one too many.
     * {@code evict}, if not null, closes that connection: called (on any thread) when the handshake slots are full and
     * it is the oldest in them. Its server must still {@link Admission#release()} it when it closed.
     */
    public Admission admit(InetAddress peer, Runnable evict) {
        if (openTotal.incrementAndGet() > total) {
            openTotal.decrementAndGet();
            refusedInAll("the " + total + " connections it may hold in all (viper.limits.connections.total)");
            return null;
        }
        if (inHandshake.incrementAndGet() > unauthenticated) {
            Admission oldest = handshaking.pollFirst();
            if (oldest == null || oldest.evict == null) {
                if (oldest != null) {
                    handshaking.addFirst(oldest);
                }
                inHandshake.decrementAndGet();
                openTotal.decrementAndGet();
                refusedInAll(unauthenticated + " connections in their handshake"
                        + " (viper.limits.connections.unauthenticated)");
                return null;
            }
            oldest.evict.run(); // its release comes when its server saw it close
            refusedInAll(unauthenticated + " connections in their handshake"
                    + " (viper.limits.connections.unauthenticated); closing the oldest");
        }
        boolean[] admitted = new boolean[1];
        open.compute(peer, (k, n) -> {
            int now = n == null ? 0 : n;
            admitted[0] = now < perPeer;
            return admitted[0] ? now + 1 : n;
        });
        if (!admitted[0]) {
            inHandshake.decrementAndGet();
            openTotal.decrementAndGet();
            if (warned.size() < 1_000 && warned.putIfAbsent(peer, Boolean.TRUE) == null) {
                LOG.log(
                        Level.WARNING,
                        server + ": " + peer.getHostAddress() + " holds " + perPeer
                                + " connections, the most one peer may (viper.limits.connections.per.peer); closing"
                                + " its next ones");
            }
            return null;
        }
        Admission a = new Admission(peer, evict);
        handshaking.addLast(a);
        return a;
    }

    /** Connections open now, in all. */
    public int open() {
        return openTotal.get();
    }

    /** Logs a refusal for a total, at most once per 10 s, with how many there were since the last line. */
    private void refusedInAll(String why) {
        long n = refusedSinceLog.incrementAndGet();
        long now = System.nanoTime();
        long last = lastLog.get();
        if (now - last >= LOG_EVERY_NANOS && lastLog.compareAndSet(last, now)) {
            refusedSinceLog.addAndGet(-n);
            LOG.log(
                    Level.WARNING,
                    server + ": closed " + n + " new connection(s) in 10 s: it holds " + why
                            + "; authenticated peers keep being served");
        }
    }

    /** One admitted connection. Thread-safe. */
    public final class Admission {
        private final InetAddress peer;
        private final Runnable evict;
        private boolean authenticated;
        private boolean released;

        private Admission(InetAddress peer, Runnable evict) {
            this.peer = peer;
            this.evict = evict;
        }

        /** The connection finished its handshake: it leaves the handshake slots. Idempotent. */
        public synchronized void authenticated() {
            if (!authenticated && !released) {
                authenticated = true;
                handshaking.remove(this);
                inHandshake.decrementAndGet();
            }
        }

        /** The connection closed. Idempotent. */
        public synchronized void release() {
            if (released) {
                return;
            }
            released = true;
            if (!authenticated) {
                handshaking.remove(this);
                inHandshake.decrementAndGet();
            }
            openTotal.decrementAndGet();
            open.computeIfPresent(peer, (k, n) -> n <= 1 ? null : n - 1);
        }
    }
}
