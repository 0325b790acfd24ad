package io.viper.agent;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.viper.Viper;
import io.viper.agent.internal.AgentContext;
import io.viper.agent.internal.Connection;
import io.viper.agent.internal.PeerCheck;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A running viper agent: a local sidecar that owns one {@link Viper} instance (its producers and consumers, every
 * transport, the notifier, the PFS) and serves local clients in other languages over a Unix domain socket, with the
 * protocol of {@code docs/agent-protocol.md}. Model bytes never cross the socket: they lie in shared-memory files
 * (safetensors images) that the agent allocates and the clients map; the consumers receive models straight into such
 * files.
 *
 * <p>The socket is owner-only: the agent creates its directory with mode 0700 when missing and the socket with mode
 * 0600, so that only the user running the agent (and root) can connect; on accept it also reads the connected process's
 * user from the kernel ({@code SO_PEERCRED}) and closes, with one log line, a connection from any other user, root
 * included.
 *
 * <p>The agent's own connections (notifier, transports) follow the settings of the {@link Viper.Builder} it is given,
 * {@code viper.auth.*} and {@code viper.tls.*} included, so that it joins a secured deployment like any producer or
 * consumer.
 *
 * <p>Threads: one accepting thread, one thread per client and one writing to it; {@link #close()} from any thread, once
 * (later calls do nothing). It stops accepting, disconnects the clients, closes the Viper instance, and removes the
 * socket and every shared-memory file it created.
 */
public final class ViperAgent implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ViperAgent.class.getName());

    private final Path socket;
    private final ServerSocketChannel server;
    private final AgentContext agent;
    private final PeerCheck peers;
    private final Map<Connection, Thread> connections = new ConcurrentHashMap<>();
    private final AtomicLong clients = new AtomicLong();
    private final Thread acceptor;
    private final List<Meter> gauges;
    private volatile boolean closed;

    private ViperAgent(Path socket, ServerSocketChannel server, AgentContext agent, PeerCheck peers) {
        this.socket = socket;
        this.server = server;
        this.agent = agent;
        this.peers = peers;
        this.gauges = registerGauges(agent.viper().meterRegistry());
        this.acceptor = Thread.ofPlatform().daemon().name("viper-agent-accept").start(this::acceptLoop);
    }

    /**
     * Starts an agent listening on {@code socket}, with its shared-memory files in {@code shmDir} (usually
     * {@code /dev/shm}) and its Viper instance built from {@code viper} (notifier, PFS, transports and any other
     * setting). Its files go in a directory of its own in {@code shmDir} (mode 0700, a random name). Removes the
     * shared-memory files and directories that agents of this user no longer running left (never another user's), and a
     * socket file no agent answers on.
     *
     * @throws ViperConfigException when another agent answers on {@code socket}, or the paths are unusable
     */
    public static ViperAgent start(Path socket, Path shmDir, Viper.Builder viper) {
        return start(socket, shmDir, viper, null);
    }

    /**
     * As {@link #start(Path, Path, Viper.Builder)}, serving only processes of {@code allowed} (null: the socket's
     * owner, this process's user).
     */
    static ViperAgent start(Path socket, Path shmDir, Viper.Builder viper, UserPrincipal allowed) {
        Path abs = socket.toAbsolutePath();
        prepareDirectory(abs.getParent());
        removeStaleSocket(abs);
        AgentContext agent = AgentContext.open(
                viper,
                shmDir,
                "viper-agent protocol " + AgentProtocol.VERSION + " pid "
                        + ProcessHandle.current().pid());
        ServerSocketChannel server = null;
        PeerCheck peers;
        try {
            server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            server.bind(UnixDomainSocketAddress.of(abs));
            Files.setPosixFilePermissions(abs, PosixFilePermissions.fromString("rw-------"));
            peers = allowed != null ? new PeerCheck(allowed) : PeerCheck.ownerOf(abs);
        } catch (IOException e) {
            agent.close();
            closeQuietly(server);
            throw new ViperConfigException("cannot listen on " + abs + ": " + e.getMessage(), e);
        }
        int stale = agent.removeStaleFiles();
        if (stale > 0) {
            LOG.log(
                    System.Logger.Level.INFO,
                    "removed " + stale + " shared-memory entries that stopped agents of this user left in " + shmDir);
        }
        LOG.log(
                System.Logger.Level.INFO,
                "listening on " + abs + " (protocol " + AgentProtocol.VERSION + ", shared memory in " + agent.shmDir()
                        + ")");
        return new ViperAgent(abs, server, agent, peers);
    }

    /** The socket clients connect to. */
    public Path socket() {
        return socket;
    }

    /** The notifier address consumers elsewhere use (with {@code embedded://host:0}, known once a producer exists). */
    public URI notifierUri() {
        return agent.viper().notifierUri();
    }

    /** The Viper instance the agent serves its clients with; closed with the agent. */
    public Viper viper() {
        return agent.viper();
    }

    /**
     * The agent's gauges, read on each scrape: clients connected ({@code viper.agent.clients}), producer slots open
     * ({@code viper.agent.slots}) and bytes of shared memory its files hold ({@code viper.agent.shared.memory}).
     */
    private List<Meter> registerGauges(MeterRegistry registry) {
        return List.of(
                Gauge.builder("viper.agent.clients", connections, Map::size)
                        .description("Client processes connected to the agent")
                        .register(registry),
                Gauge.builder("viper.agent.slots", agent, AgentContext::slots)
                        .description("Producer slots (shared-memory files clients write checkpoints into) open")
                        .register(registry),
                Gauge.builder("viper.agent.shared.memory", agent, AgentContext::sharedMemoryBytes)
                        .description("Bytes of the agent's shared-memory files: producers' slots, consumers' buffers")
                        .baseUnit("bytes")
                        .register(registry));
    }

    private void acceptLoop() {
        while (!closed) {
            SocketChannel ch;
            try {
                ch = server.accept();
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                if (!closed) {
                    LOG.log(
                            System.Logger.Level.WARNING,
                            "accepting a client on " + socket + " failed: " + e.getMessage());
                }
                continue;
            }
            var refusal = peers.refusal(ch);
            if (refusal.isPresent()) {
                LOG.log(System.Logger.Level.WARNING, "refused a client on " + socket + ": " + refusal.get());
                closeQuietly(ch);
                continue;
            }
            Connection c = new Connection(ch, agent, clients.incrementAndGet());
            Thread t = Thread.ofVirtual().name("viper-agent-client").unstarted(() -> {
                try {
                    c.run();
                } finally {
                    connections.remove(c);
                }
            });
            connections.put(c, t);
            t.start();
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeQuietly(server);
        try {
            acceptor.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        connections.keySet().forEach(Connection::close);
        // Each client's thread releases its leases and slots as it ends.
        for (Thread t : List.copyOf(connections.values())) {
            try {
                t.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        gauges.forEach(agent.viper().meterRegistry()::remove);
        agent.close();
        try {
            Files.deleteIfExists(socket);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot remove " + socket + ": " + e.getMessage());
        }
    }

    /** Creates the socket's directory owner-only (0700) when it is missing. */
    private static void prepareDirectory(Path dir) {
        if (Files.isDirectory(dir)) {
            return;
        }
        try {
            Files.createDirectories(
                    dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (IOException e) {
            throw new ViperConfigException("cannot create the socket directory " + dir + ": " + e.getMessage(), e);
        }
    }

    /** Refuses a socket another agent answers on; removes one nobody answers on (an agent that died). */
    private static void removeStaleSocket(Path socket) {
        if (!Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (!isSocket(socket)) {
            throw new ViperConfigException(socket + " exists and is not a socket (give the agent another --socket)");
        }
        boolean answered;
        try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            answered = probe.connect(UnixDomainSocketAddress.of(socket));
        } catch (IOException e) {
            answered = false;
        }
        if (answered) {
            throw new ViperConfigException(
                    "another agent is listening on " + socket + " (stop it, or give this one another --socket)");
        }
        try {
            Files.delete(socket);
        } catch (IOException d) {
            throw new ViperException(
                    ViperException.Reason.IO, "cannot remove the stale socket " + socket + ": " + d.getMessage(), d);
        }
    }

    private static boolean isSocket(Path p) {
        try {
            int mode = (Integer) Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS);
            return (mode & 0170000) == 0140000;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing anyway
            }
        }
    }
}
