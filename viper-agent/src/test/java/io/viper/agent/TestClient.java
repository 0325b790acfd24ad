package io.viper.agent;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.format.SafetensorsHeader;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;

/**
 * A client of the agent's protocol written from docs/agent-protocol.md, for the tests: frames by hand, requests with
 * ids, events kept aside while a reply is awaited, slots mapped like a client maps them. One thread.
 */
final class TestClient implements AutoCloseable {
    static final ObjectMapper JSON = new ObjectMapper();
    /** The slot the last {@link #publish} allocated; -1 before. */
    private long lastSlot = -1;
    /** The bytes of the image the last {@link #publish} wrote into it. */
    private long lastBytes;

    private final SocketChannel channel;
    private final Deque<ObjectNode> events = new ArrayDeque<>();
    /** The newest version the agent named, in the hello reply or an event {@link #awaitVersion} read. */
    private long reached;

    private long nextId;

    private TestClient(SocketChannel channel) {
        this.channel = channel;
    }

    static TestClient connect(Path socket) throws IOException {
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        ch.connect(UnixDomainSocketAddress.of(socket));
        return new TestClient(ch);
    }

    /** Says hello as {@code role} of {@code model}; returns the reply. */
    ObjectNode hello(String role, String model) throws IOException {
        ObjectNode reply = request(JSON.createObjectNode()
                .put("op", "hello")
                .put("protocol", AgentProtocol.VERSION)
                .put("role", role)
                .put("model", model)
                .put("client", "java test"));
        reached = Math.max(reached, reply.path("version").asLong(0));
        return reply;
    }

    /** Sends {@code message} with a new id and returns its reply (ok or not). */
    ObjectNode request(ObjectNode message) throws IOException {
        long id = ++nextId;
        message.put("id", id);
        send(message);
        return reply(id, message);
    }

    /**
     * Sends {@code json}, an object written by hand (with the bare NaN or Infinity some encoders write), with a new id
     * put first; returns its reply.
     */
    ObjectNode requestRaw(String json) throws IOException {
        long id = ++nextId;
        String withId = "{\"id\":" + id + "," + json.substring(json.indexOf('{') + 1);
        byte[] body = withId.getBytes(StandardCharsets.UTF_8);
        sendRaw(ByteBuffer.allocate(4 + body.length)
                .putInt(body.length)
                .put(body)
                .array());
        return reply(id, json);
    }

    private ObjectNode reply(long id, Object message) throws IOException {
        while (true) {
            ObjectNode m = read();
            if (m == null) {
                throw new IOException("the agent closed the connection before replying to " + message);
            }
            if (m.has("event")) {
                events.add(m);
            } else if (m.path("id").asLong(-1) == id) {
                return m;
            }
        }
    }

    ObjectNode request(String op, Object... fields) throws IOException {
        ObjectNode m = JSON.createObjectNode().put("op", op);
        for (int i = 0; i < fields.length; i += 2) {
            m.putPOJO((String) fields[i], fields[i + 1]);
        }
        return request(m);
    }

    /** Sends without waiting for a reply (a release, or something the agent will refuse). */
    void send(ObjectNode message) throws IOException {
        byte[] body = JSON.writeValueAsBytes(message);
        sendRaw(ByteBuffer.allocate(4 + body.length)
                .putInt(body.length)
                .put(body)
                .array());
    }

    void sendRaw(byte[] bytes) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        while (b.hasRemaining()) {
            channel.write(b);
        }
    }

    /** The next update event, waiting for it. */
    ObjectNode event() throws IOException {
        if (!events.isEmpty()) {
            return events.poll();
        }
        ObjectNode m = read();
        assertTrue(m != null && m.has("event"), "expected an event, got " + m);
        return m;
    }

    /**
     * Waits until the agent has said it holds {@code version} or a newer one, in the hello reply or an update event, as
     * the Python client does: a version swapped in while this client joined is named by the reply and by no event.
     * Returns the newest version said so far.
     */
    long awaitVersion(long version) throws IOException {
        while (reached < version) {
            reached = Math.max(reached, event().get("version").asLong());
        }
        return reached;
    }

    /** The next frame, or null when the agent closed the connection. */
    ObjectNode read() throws IOException {
        ByteBuffer length = ByteBuffer.allocate(4);
        if (!fill(length)) {
            return null;
        }
        ByteBuffer body = ByteBuffer.allocate(length.getInt(0));
        if (!fill(body)) {
            return null;
        }
        return (ObjectNode) JSON.readTree(body.array());
    }

    private boolean fill(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (channel.read(b) < 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Publishes {@code tensors} (U8, one per entry) as a producer client does: asks for a slot, maps it, writes the
     * safetensors image, publishes. Returns the publish reply; {@code beforePublish} runs between writing and
     * publishing.
     */
    ObjectNode publish(Map<String, byte[]> tensors, Runnable beforePublish) throws IOException {
        return publish(tensors, beforePublish, new Object[0]);
    }

    /** As {@link #publish(Map, Runnable)}, with more fields of the publish request (name, value pairs). */
    ObjectNode publish(Map<String, byte[]> tensors, Runnable beforePublish, Object... moreFields) throws IOException {
        long offset = 0;
        List<TensorInfo> infos = new ArrayList<>();
        for (Map.Entry<String, byte[]> e : tensors.entrySet()) {
            infos.add(new TensorInfo(
                    e.getKey(),
                    io.viper.tensor.DType.U8,
                    new long[] {e.getValue().length},
                    offset,
                    e.getValue().length));
            offset += e.getValue().length;
        }
        byte[] header = SafetensorsHeader.encode(infos, Map.of("source", "test"));
        long bytes = header.length + offset;
        ObjectNode slot = request("alloc", "bytes", bytes);
        assertTrue(slot.path("ok").asBoolean(), slot.toString());
        lastSlot = slot.get("slot").asLong();
        lastBytes = bytes;
        try (Arena arena = Arena.ofConfined();
                FileChannel ch = FileChannel.open(
                        Path.of(slot.get("path").asText()), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
            MemorySegment.copy(MemorySegment.ofArray(header), 0, m, 0, header.length);
            long at = header.length;
            for (byte[] t : tensors.values()) {
                MemorySegment.copy(MemorySegment.ofArray(t), 0, m, at, t.length);
                at += t.length;
            }
        }
        beforePublish.run();
        Object[] fields = {"slot", slot.get("slot").asLong(), "bytes", bytes, "iteration", 10, "loss", 0.5};
        Object[] all = Arrays.copyOf(fields, fields.length + moreFields.length);
        System.arraycopy(moreFields, 0, all, fields.length, moreFields.length);
        return request("publish", all);
    }

    /** The slot the last {@link #publish} filled. */
    long lastSlot() {
        return lastSlot;
    }

    /** The bytes of the image the last {@link #publish} wrote into {@link #lastSlot()}. */
    long lastBytes() {
        return lastBytes;
    }

    /** Reads the safetensors image a lease reply points to, as a client maps it. */
    static byte[] leasedImage(ObjectNode lease) throws IOException {
        try (Arena arena = Arena.ofConfined();
                FileChannel ch = FileChannel.open(Path.of(lease.get("path").asText()), StandardOpenOption.READ)) {
            return ch.map(
                            FileChannel.MapMode.READ_ONLY,
                            lease.get("offset").asLong(),
                            lease.get("bytes").asLong(),
                            arena)
                    .toArray(ValueLayout.JAVA_BYTE);
        }
    }

    /**
     * Whether the agent has closed this connection (reads past anything still queued). A reset counts: the agent closed
     * with bytes of ours it had not read.
     */
    boolean closedByAgent() throws IOException {
        try {
            while (read() != null) {
                // skip what was still queued
            }
        } catch (SocketException e) {
            if (!String.valueOf(e.getMessage()).contains("reset")) {
                throw e;
            }
        }
        return true;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
