package io.viper.net;

import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Counts one server's open connections per peer address, so that the server can close at once, before reading anything,
 * each connection beyond {@code viper.limits.connections.per.peer}: one peer then cannot take every file descriptor and
 * lock everyone else out. The first refusal per peer is logged as a warning. Thread-safe; every {@link #admit} that
 * returned true is paired with one {@link #release}.
 */
public final class PeerLimit {
    private static final System.Logger LOG = System.getLogger(PeerLimit.class.getName());

    private final String server;
    private final int limit;
    private final Map<InetAddress, Integer> open = new ConcurrentHashMap<>();
    private final Map<InetAddress, Boolean> warned = new ConcurrentHashMap<>();

    /** The limit of {@code server} (for messages): {@code limit} connections per peer address. */
    public PeerLimit(String server, int limit) {
        this.server = server;
        this.limit = limit;
    }

    /** Counts a new connection from {@code peer}; false (and nothing counted) when it is one too many. */
    public boolean admit(InetAddress peer) {
        boolean[] admitted = new boolean[1];
        open.compute(peer, (k, n) -> {
            int now = n == null ? 0 : n;
            admitted[0] = now < limit;
            return admitted[0] ? now + 1 : n;
        });
        if (!admitted[0] && warned.size() < 1_000 && warned.putIfAbsent(peer, Boolean.TRUE) == null) {
            LOG.log(
                    Level.WARNING,
                    server + ": " + peer.getHostAddress() + " holds " + limit
                            + " connections, the most one peer may (viper.limits.connections.per.peer); closing its"
                            + " next ones");
        }
        return admitted[0];
    }

    /** A connection {@link #admit} counted has closed. */
    public void release(InetAddress peer) {
        open.computeIfPresent(peer, (k, n) -> n <= 1 ? null : n - 1);
    }
}
