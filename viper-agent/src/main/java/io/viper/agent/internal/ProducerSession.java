package io.viper.agent.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.PublishHandle;
import io.viper.Snapshot;
import io.viper.ViperConfig;
import io.viper.ViperProducer;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperFormatException;
import io.viper.errors.ViperNotFoundException;
import io.viper.format.SafetensorsHeader;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A producer client's requests. The client asks for slots (shared-memory files it maps and writes a safetensors image
 * into), then publishes a slot: the agent parses the image's header, copies the tensors into the producer's staging
 * (the Java SDK's stall, on this connection's thread, while the client goes on training) and replies with the version.
 * A slot whose file was deleted meanwhile is still published from the agent's mapping, then retired with one log line.
 *
 * <p>One connection's thread.
 */
final class ProducerSession implements Session {
    private static final System.Logger LOG = System.getLogger(ProducerSession.class.getName());
    /** The kind of a slot's shared-memory file ({@link SharedMemory#create}). */
    static final String SLOT_KIND = "slot";

    /** Slots one client may hold: two let it fill one while the agent copies the other. */
    static final int MAX_SLOTS = 4;

    private final String model;
    private final String peer;
    private final ViperProducer producer;
    private final Producers producers;
    private final SharedMemory shm;
    private final long budget;
    private final Map<Long, ShmFile> slots = new LinkedHashMap<>();
    private long nextSlot;
    /** Whether the last publish failed: the next one's changes are not used (see {@link #publish(Request)}). */
    private boolean publishRefused;

    ProducerSession(String model, String peer, Producers producers, SharedMemory shm, ViperConfig config) {
        this.model = model;
        this.peer = peer;
        this.producers = producers;
        this.shm = shm;
        this.budget = config.get(ViperConfig.STAGING_BUDGET);
        this.producer = producers.claim(model, peer);
    }

    @Override
    public long version() {
        return producer.latestVersion();
    }

    @Override
    public ObjectNode handle(Request r) {
        return switch (r.op()) {
            case "alloc" -> alloc(r.count("bytes"));
            case "free" -> free(r.longValue("slot"));
            case "publish" -> publish(r);
            case "flush" -> {
                producer.flush();
                yield Frames.message().put("version", producer.latestVersion());
            }
            default ->
                throw new ViperFormatException(
                        peer, "unknown operation '" + r.op() + "' for a producer (alloc, free, publish, flush, ping)");
        };
    }

    private ObjectNode alloc(long bytes) {
        if (bytes < SafetensorsHeader.LENGTH_PREFIX_BYTES + 2) {
            throw new ViperConfigException("alloc: a slot of " + bytes + " bytes cannot hold a safetensors image");
        }
        if (bytes > budget) {
            throw new ViperConfigException(
                    "alloc: a slot of " + bytes + " bytes exceeds the producer's staging budget ("
                            + ViperConfig.STAGING_BUDGET.name() + " = " + budget + ")");
        }
        if (slots.size() >= MAX_SLOTS) {
            throw new ViperConfigException("alloc: this client holds " + MAX_SLOTS + " slots already; free one first");
        }
        ShmFile f = shm.create(SLOT_KIND, bytes);
        long id = ++nextSlot;
        slots.put(id, f);
        return Frames.message().put("slot", id).put("path", f.path().toString()).put("bytes", bytes);
    }

    private ObjectNode free(long id) {
        ShmFile f = slot(id);
        slots.remove(id);
        if (!f.linked()) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    peer + ": shared-memory file " + f.path() + " (slot " + id
                            + ") was deleted under the agent; dropped it");
        }
        f.close();
        return Frames.message();
    }

    private ObjectNode publish(Request r) {
        // The client's changes are relative to its last publish: after one refused before the producer
        // saw it, they would miss that one's changes, so the next publish is compared instead.
        boolean changesUsable = !publishRefused;
        publishRefused = true;
        ObjectNode reply = publish(r, changesUsable);
        publishRefused = false;
        return reply;
    }

    private ObjectNode publish(Request r, boolean changesUsable) {
        long id = r.longValue("slot");
        ShmFile f = slot(id);
        long bytes = r.count("bytes");
        if (bytes > f.byteSize()) {
            throw new ViperFormatException(
                    peer, "publish: " + bytes + " bytes do not fit slot " + id + " of " + f.byteSize());
        }
        MemorySegment image = f.segment().asSlice(0, bytes);
        SafetensorsHeader header = SafetensorsHeader.parse(peer + " slot " + id, image);
        Map<String, String> meta = new LinkedHashMap<>(header.metadata());
        r.optionalLong("iteration").ifPresent(it -> meta.put(Checkpoint.META_ITERATION, Long.toString(it)));
        r.optionalDouble("loss").ifPresent(loss -> meta.put(Checkpoint.META_LOSS, Double.toString(loss)));
        long dataStart = header.dataStart();
        Map<String, Snapshot.Changes> declared = changes(r, header);
        Map<String, Snapshot.Changes> changes = changesUsable ? declared : Map.of();
        Snapshot snapshot = sink -> {
            for (TensorInfo t : header.tensors()) {
                MemorySegment data = image.asSlice(dataStart + t.offset(), t.length());
                Snapshot.Changes c = changes.get(t.name());
                if (c != null) {
                    sink.add(t.name(), t.dtype(), t.shape(), data, c);
                } else {
                    sink.add(t.name(), t.dtype(), t.shape(), data);
                }
            }
        };
        // Checked before the copy: a file deleted while the agent copies still has its pages in this mapping.
        boolean deleted = !f.linked();
        PublishHandle h = producer.publish(snapshot, meta);
        if (deleted) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    peer + ": shared-memory file " + f.path() + " (slot " + id
                            + ") was deleted under the agent; published v" + h.version()
                            + " from the agent's mapping and retired the slot");
            slots.remove(id);
            f.close();
        }
        return Frames.message()
                .put("version", h.version())
                .put("copy_ms", h.stallNanos() / 1e6)
                .put("copied_bytes", h.copiedBytes())
                .put("unchanged_bytes", h.unchangedBytes())
                .put("slot_retired", deleted);
    }

    /**
     * The optional {@code changes} of a publish: per tensor of the image, the byte ranges that may differ from its
     * previous publish, as {@code [start, end, start, end, ...]} relative to the tensor ({@link Snapshot.Changes}); a
     * tensor it does not name is not declared. Empty without the field.
     *
     * @throws ViperFormatException naming the first malformed entry or a tensor the image does not hold
     */
    private Map<String, Snapshot.Changes> changes(Request r, SafetensorsHeader header) {
        JsonNode field = r.body().get("changes");
        if (field == null || field.isNull()) {
            return Map.of();
        }
        if (!field.isObject()) {
            throw new ViperFormatException(
                    peer,
                    "publish: field \"changes\" must be an object of tensor name to [start, end, ...], got "
                            + field.getNodeType().name().toLowerCase(Locale.ROOT));
        }
        Map<String, Long> sizes = new HashMap<>();
        header.tensors().forEach(t -> sizes.put(t.name(), t.length()));
        Map<String, Snapshot.Changes> out = new HashMap<>();
        for (Map.Entry<String, JsonNode> e : field.properties()) {
            String name = e.getKey();
            Long size = sizes.get(name);
            if (size == null) {
                throw new ViperFormatException(
                        peer, "publish: changes name tensor '" + name + "', which the slot's image does not hold");
            }
            JsonNode bounds = e.getValue();
            if (!bounds.isArray() || bounds.size() % 2 != 0) {
                throw new ViperFormatException(
                        peer, "publish: changes of '" + name + "' must be an array of start, end pairs");
            }
            long[] b = new long[bounds.size()];
            for (int i = 0; i < b.length; i += 2) {
                JsonNode start = bounds.get(i);
                JsonNode end = bounds.get(i + 1);
                if (!start.isIntegralNumber()
                        || !end.isIntegralNumber()
                        || !start.canConvertToLong()
                        || !end.canConvertToLong()
                        || start.asLong() < 0
                        || end.asLong() < start.asLong()
                        || end.asLong() > size) {
                    throw new ViperFormatException(
                            peer,
                            "publish: changes of '" + name + "': [" + start + ", " + end + ") is not a range of its "
                                    + size + " bytes");
                }
                b[i] = start.asLong();
                b[i + 1] = end.asLong();
            }
            Snapshot.Changes c = Snapshot.Changes.ofBounds(b);
            out.put(name, c);
        }
        return out;
    }

    private ShmFile slot(long id) {
        ShmFile f = slots.get(id);
        if (f == null) {
            throw new ViperNotFoundException("slot " + id + " is not one of this client's (" + slots.keySet() + ")");
        }
        return f;
    }

    @Override
    public void close() {
        slots.values().forEach(ShmFile::close);
        slots.clear();
        producers.release(model, peer);
    }
}
