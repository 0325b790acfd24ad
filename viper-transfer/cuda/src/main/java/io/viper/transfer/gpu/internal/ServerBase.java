package io.viper.transfer.gpu.internal;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.spi.StagedCheckpoint;
import io.viper.spi.TransportServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Control-channel server shared by the GPU transports: a TCP listener whose accept thread hands
 * every connection to its own virtual thread running {@link #serve}. Exposed versions are kept by
 * {@code model/version}. {@code expose}/{@code withdraw} come from the producer's background thread.
 */
abstract class ServerBase implements TransportServer {
    static final System.Logger LOG = System.getLogger(ServerBase.class.getName());

    final String scheme;
    final Map<String, StagedCheckpoint> exposed = new ConcurrentHashMap<>();
    private final ServerSocketChannel listener;
    private final Location location;
    private final Thread acceptor;
    private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
    private final Object idle = new Object();
    private int busy;
    volatile boolean closed;

    ServerBase(String scheme, URI bind) {
        this.scheme = scheme;
        if (bind.getHost() == null || bind.getPort() < 0) {
            throw new ViperConfigException(scheme + " bind address " + bind + " needs host:port (port 0 picks a free one)");
        }
        try {
            listener = ServerSocketChannel.open();
            listener.bind(new InetSocketAddress(bind.getHost(), bind.getPort()));
            int port = ((InetSocketAddress) listener.getLocalAddress()).getPort();
            location = new Location(URI.create(scheme + "://" + bind.getHost() + ":" + port), Tier.GPU);
        } catch (IOException e) {
            throw new ViperException(ViperException.Reason.IO, "cannot bind " + bind + ": " + e.getMessage(), e);
        }
        acceptor = Thread.ofPlatform().daemon().name("viper-" + scheme + "-accept").start(this::acceptLoop);
    }

    static String key(String model, long version) {
        return model + "/" + version;
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                SocketChannel ch = listener.accept();
                ch.socket().setTcpNoDelay(true);
                connections.add(ch);
                Thread.ofVirtual().name("viper-" + scheme + "-conn").start(() -> {
                    try (ch) {
                        serve(ch);
                    } catch (ClosedChannelException | java.io.EOFException e) {
                        LOG.log(System.Logger.Level.DEBUG, "{0}: consumer went away", scheme);
                    } catch (IOException | RuntimeException e) {
                        LOG.log(System.Logger.Level.WARNING, "{0}: request failed: {1}", scheme, e.getMessage());
                    } finally {
                        connections.remove(ch);
                    }
                });
            } catch (IOException e) {
                if (!closed) {
                    LOG.log(System.Logger.Level.WARNING, "{0}: accept failed: {1}", scheme, e.getMessage());
                }
                return;
            }
        }
    }

    /** Answers the requests of one connection until it closes; leases taken must be closed before returning. */
    abstract void serve(SocketChannel ch) throws IOException;

    /** A lease or transfer starts: {@link #close} waits for it (up to {@value #DRAIN_MS} ms) before cutting connections. */
    void begin() {
        synchronized (idle) {
            busy++;
        }
    }

    /** The lease or transfer from {@link #begin} ended. */
    void end() {
        synchronized (idle) {
            busy--;
            idle.notifyAll();
        }
    }

    static final long DRAIN_MS = 5_000;

    @Override
    public Location location() {
        return location;
    }

    @Override
    public void close() {
        closed = true;
        try {
            listener.close();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "closing listener: " + e.getMessage());
        }
        // Consumers that hold a lease are copying out of our memory: let them finish first.
        long deadline = System.currentTimeMillis() + DRAIN_MS;
        synchronized (idle) {
            while (busy > 0 && System.currentTimeMillis() < deadline) {
                try {
                    idle.wait(Math.max(1, deadline - System.currentTimeMillis()));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            if (busy > 0) {
                LOG.log(System.Logger.Level.WARNING, "{0}: closing with {1} transfers in progress", scheme, busy);
            }
        }
        for (SocketChannel ch : connections) {
            try {
                ch.close();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.DEBUG, "closing connection: " + e.getMessage());
            }
        }
        try {
            acceptor.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
