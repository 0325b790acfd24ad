package io.viper.transfer.cuda.internal;

import io.viper.ViperConfig;
import io.viper.auth.ConnectionGate;
import io.viper.auth.Handshake;
import io.viper.errors.ViperException;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.net.FrameChannel;
import io.viper.net.HostPort;
import io.viper.net.PeerLimit;
import io.viper.spi.StagedCheckpoint;
import io.viper.spi.TransportServer;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Control-channel server shared by the GPU transports: a TCP listener whose accept thread hands every connection, as a
 * {@link FrameChannel}, to its own virtual thread, which runs the authentication handshake, checks {@link Wire#MAGIC},
 * then {@link #serve}s requests (each read with {@link #request}, whole within {@code viper.limits.idle.ms}); a peer
 * address holding {@code viper.limits.connections.per.peer} connections gets no more ({@link ConnectionGate}). Exposed
 * versions are kept by {@code model/version}. {@code expose} comes from the producer's background thread,
 * {@code withdraw} from its withdrawal thread.
 */
abstract class ServerBase implements TransportServer {
    static final System.Logger LOG = System.getLogger(ServerBase.class.getName());

    final String scheme;
    final Map<String, StagedCheckpoint> exposed = new ConcurrentHashMap<>();
    private final ServerSocketChannel listener;
    private final Location location;
    private final Thread acceptor;
    private final ConnectionGate gate;
    private final Set<FrameChannel> connections = ConcurrentHashMap.newKeySet();
    private final Object idle = new Object();
    private int busy;
    volatile boolean closed;

    ServerBase(String scheme, URI bind, ViperConfig config) {
        this.scheme = scheme;
        HostPort address = HostPort.parse(bind, scheme, true);
        this.gate = ConnectionGate.forServer(config, scheme, address.resolve().getAddress(), Wire.MAX_FRAME);
        try {
            listener = ServerSocketChannel.open();
            listener.bind(address.resolve());
            int port = ((InetSocketAddress) listener.getLocalAddress()).getPort();
            location = new Location(address.withPort(port).uri(scheme), Tier.GPU);
        } catch (IOException e) {
            throw new ViperException(ViperException.Reason.IO, "cannot bind " + bind + ": " + e.getMessage(), e);
        }
        acceptor =
                Thread.ofPlatform().daemon().name("viper-" + scheme + "-accept").start(this::acceptLoop);
    }

    static String key(String model, long version) {
        return model + "/" + version;
    }

    private void acceptLoop() {
        while (!closed) {
            SocketChannel accepted;
            try {
                accepted = listener.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.log(System.Logger.Level.WARNING, "{0}: accept failed: {1}", scheme, e.getMessage());
                }
                return;
            }
            InetAddress peer;
            try {
                peer = ((InetSocketAddress) accepted.getRemoteAddress()).getAddress();
            } catch (IOException e) {
                closeQuietly(accepted);
                continue;
            }
            PeerLimit.Admission admission = gate.peers().admit(peer, null);
            if (admission == null) {
                closeQuietly(accepted);
                continue;
            }
            try {
                FrameChannel ch = FrameChannel.of(accepted, gate.frames(0));
                connections.add(ch);
                if (closed) {
                    ch.close(); // close() may have missed it
                }
                Thread.ofVirtual().name("viper-" + scheme + "-conn").start(() -> {
                    try (ch) {
                        gate.handshake(
                                ch, peer.getHostAddress(), admission); // a peer without the key gets nothing else
                        ByteBuffer magic = ByteBuffer.allocate(4);
                        ch.readFully(magic, gate.requestDeadline());
                        if (magic.getInt(0) != Wire.MAGIC) {
                            throw new IOException("not a Viper " + scheme + " consumer of this version (magic 0x"
                                    + Integer.toHexString(magic.getInt(0)) + ")");
                        }
                        serve(ch);
                    } catch (ClosedChannelException | EOFException e) {
                        LOG.log(System.Logger.Level.DEBUG, "{0}: consumer went away", scheme);
                    } catch (IOException | RuntimeException | Handshake.Refused e) {
                        LOG.log(
                                System.Logger.Level.WARNING,
                                "{0}: closing the connection from {1}: {2}",
                                scheme,
                                peer.getHostAddress(),
                                e.getMessage());
                    } finally {
                        connections.remove(ch);
                        admission.release();
                    }
                });
            } catch (IOException e) {
                admission.release();
                LOG.log(System.Logger.Level.WARNING, "{0}: cannot serve a connection: {1}", scheme, e.getMessage());
            }
        }
    }

    /** Answers the requests of one connection until it closes; leases taken must be closed before returning. */
    abstract void serve(FrameChannel ch) throws IOException;

    /** The next request of a connection, which must arrive whole within {@code viper.limits.idle.ms}. */
    DataInputStream request(FrameChannel ch) throws IOException {
        return Wire.receive(ch, gate.requestDeadline());
    }

    private static void closeQuietly(SocketChannel s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // refusing anyway
        }
    }

    /**
     * A lease or transfer starts: {@link #close} waits for it (up to {@value #DRAIN_MS} ms) before cutting connections.
     */
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
                LOG.log(
                        System.Logger.Level.WARNING,
                        "{0}: closing with {1} transfers in progress",
                        scheme,
                        Long.toString(busy));
            }
        }
        for (FrameChannel ch : connections) {
            ch.close();
        }
        try {
            acceptor.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
