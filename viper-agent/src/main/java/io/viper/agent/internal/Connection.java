package io.viper.agent.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.agent.AgentProtocol;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.manifest.Manifest;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import jdk.net.ExtendedSocketOptions;

/**
 * One client of the agent. Its thread reads the client's frames in order and answers each (the first must be
 * {@code hello}, which makes it a producer's or a consumer's {@link Session}); a writer thread sends replies and events
 * in the order they were queued. A frame that breaks the framing (garbage, a truncated frame) is refused with an error
 * reply and one log line, and the connection is closed; a bad request within a good frame gets an error reply and the
 * connection goes on. When the client goes away its session releases what it held.
 *
 * <p>Threads: {@link #run()} on the connection's own thread; {@link #send} from any thread (the consumers' fetch
 * threads send events); {@link #close()} from any thread.
 */
public final class Connection implements Runnable {
    private static final System.Logger LOG = System.getLogger(Connection.class.getName());
    /** Replies and events queued for a client that does not read them; beyond this it is disconnected. */
    static final int MAX_QUEUED = 1024;

    private static final ByteBuffer END = ByteBuffer.allocate(0);

    private final SocketChannel channel;
    private final AgentContext agent;
    private final BlockingQueue<ByteBuffer> outbound = new ArrayBlockingQueue<>(MAX_QUEUED + 1);
    private volatile String peer;
    private Session session;
    private boolean closeAfterReply;

    public Connection(SocketChannel channel, AgentContext agent, long number) {
        this.channel = channel;
        this.agent = agent;
        this.peer = "client " + number + user(channel);
    }

    /** Reads and answers frames until the client goes away, then cleans up. */
    @Override
    public void run() {
        Thread writer = Thread.ofVirtual().name("viper-agent-writer").start(this::writeLoop);
        try {
            while (!closeAfterReply) {
                ObjectNode frame = Frames.read(channel, peer);
                if (frame == null) {
                    break;
                }
                answer(new Request(frame, peer));
            }
        } catch (ViperFormatException e) {
            LOG.log(System.Logger.Level.WARNING, e.getMessage() + "; closed the connection");
            sendError(null, e);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, peer + ": connection failed: " + e.getMessage());
        } finally {
            if (session != null) {
                session.close();
            }
            outbound.offer(END);
            try {
                writer.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            close();
        }
    }

    private void answer(Request r) {
        Long id = r.id();
        try {
            ObjectNode reply = switch (r.op()) {
                case "hello" -> hello(r);
                case "ping" -> Frames.message();
                default -> {
                    if (session == null) {
                        throw new ViperConfigException(
                                r.op() + ": say hello first (the first request names the protocol, role and model)");
                    }
                    yield session.handle(r);
                }
            };
            if (reply != null) {
                reply.put("id", id);
                reply.put("ok", true);
                send(reply);
            }
        } catch (ViperException e) {
            if (e.reason() == ViperException.Reason.FORMAT) {
                LOG.log(System.Logger.Level.WARNING, e.getMessage() + "; refused");
            }
            sendError(id, e);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, peer + ": " + r.op() + " failed: " + e, e);
            sendError(id, new ViperException(ViperException.Reason.INTERNAL, r.op() + " failed in the agent: " + e, e));
        }
    }

    private ObjectNode hello(Request r) {
        if (session != null) {
            throw new ViperConfigException("hello: this connection said hello already");
        }
        long protocol = r.longValue("protocol");
        if (protocol != AgentProtocol.VERSION) {
            closeAfterReply = true;
            throw new ViperConfigException(
                    "hello: protocol " + protocol + " is not spoken by this agent, which speaks protocol "
                            + AgentProtocol.VERSION + " (use a client and an agent of the same Viper release)");
        }
        String role = r.text("role");
        String model = Manifest.validateModelName(r.text("model"));
        String client = r.body().path("client").asText("").strip();
        if (!client.isEmpty()) {
            peer = peer + " (" + (client.length() > 100 ? client.substring(0, 100) : client) + ")";
        }
        session = switch (role) {
            case "producer" ->
                new ProducerSession(
                        model,
                        peer,
                        agent.producers(),
                        agent.shm(),
                        agent.viper().config());
            case "consumer" -> new ConsumerSession(model, peer, this, agent.consumers());
            default ->
                throw new ViperFormatException(
                        peer, "hello: role must be \"producer\" or \"consumer\", got \"" + role + "\"");
        };
        LOG.log(System.Logger.Level.INFO, peer + ": " + role + " of " + model);
        return Frames.message()
                .put("protocol", AgentProtocol.VERSION)
                .put("agent", agent.description())
                .put("version", session.version())
                .put("shm_dir", agent.shm().dir().toString());
    }

    /** Queues {@code message} for the client; a client that stopped reading is disconnected. Any thread. */
    void send(ObjectNode message) {
        if (!outbound.offer(Frames.encode(message)) || outbound.size() > MAX_QUEUED) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    peer + ": does not read what the agent sends (" + MAX_QUEUED
                            + " messages queued); disconnected it");
            close();
        }
    }

    private void sendError(Long id, ViperException e) {
        ObjectNode reply = Frames.message();
        reply.put("id", id);
        reply.put("ok", false);
        reply.put("reason", e.reason().name());
        reply.put("message", e.getMessage());
        send(reply);
    }

    private void writeLoop() {
        try {
            while (true) {
                ByteBuffer b = outbound.take();
                if (b == END) {
                    return;
                }
                while (b.hasRemaining()) {
                    channel.write(b);
                }
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, peer + ": cannot write: " + e.getMessage());
            close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Closes the socket; the reading thread then ends and cleans up. Idempotent; any thread. */
    public void close() {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    private static String user(SocketChannel channel) {
        try {
            return ", user "
                    + channel.getOption(ExtendedSocketOptions.SO_PEERCRED)
                            .user()
                            .getName();
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }
}
