package io.viper.agent.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.ModelLease;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperFormatException;
import io.viper.errors.ViperNotFoundException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeSet;

/**
 * A consumer client's requests: a lease holds the serving version for the client (the Java lease stays open, so the
 * version's buffer is not reused) and tells it where to map the version, or, before the first version, is refused with
 * NOT_FOUND, or with why the agent cannot follow the model once its consumer stopped (no version will come); a release
 * ends it. Update events reach the client through {@link Consumers}. A client that goes away holding leases has them
 * released, with one log line.
 *
 * <p>One connection's thread.
 */
final class ConsumerSession implements Session {
    private static final System.Logger LOG = System.getLogger(ConsumerSession.class.getName());
    /** Leases one client may hold at once; each keeps a version's buffer from being reused. */
    static final int MAX_LEASES = 64;

    private final String model;
    private final String peer;
    private final Connection connection;
    private final Consumers consumers;
    private final Consumers.Followed followed;
    private final Map<Long, Held> leases = new LinkedHashMap<>();
    private long nextLease;

    private record Held(ModelLease lease, ModelFiles.View view) {
        void release() {
            view.release().run();
            lease.close();
        }
    }

    ConsumerSession(String model, String peer, Connection connection, Consumers consumers) {
        this.model = model;
        this.peer = peer;
        this.connection = connection;
        this.consumers = consumers;
        this.followed = consumers.follow(model, connection);
    }

    @Override
    public long version() {
        return followed.consumer.version();
    }

    @Override
    public ObjectNode handle(Request r) {
        return switch (r.op()) {
            case "lease" -> lease();
            case "release" -> {
                release(r.longValue("lease"));
                yield null;
            }
            default ->
                throw new ViperFormatException(
                        peer, "unknown operation '" + r.op() + "' for a consumer (lease, release, ping)");
        };
    }

    private ObjectNode lease() {
        if (leases.size() >= MAX_LEASES) {
            throw new ViperConfigException("lease: this client holds " + MAX_LEASES + " leases already; release some");
        }
        ModelLease lease = followed.consumer
                .currentIfAny()
                .orElseThrow(() -> followed.failure()
                        .orElseGet(() -> new ViperNotFoundException(
                                "model " + model + " has no version on this agent yet (wait for an update)")));
        ModelFiles.View view;
        try {
            view = followed.files.open(lease);
        } catch (RuntimeException e) {
            lease.close();
            throw e;
        }
        long id = ++nextLease;
        leases.put(id, new Held(lease, view));
        return Frames.message()
                .put("lease", id)
                .put("version", lease.version())
                .put("path", view.path().toString())
                .put("offset", view.offset())
                .put("bytes", view.bytes());
    }

    private void release(long id) {
        Held h = leases.remove(id);
        if (h == null) {
            // A release wants no reply: the mistake is only logged.
            LOG.log(
                    System.Logger.Level.WARNING,
                    peer + ": release of lease " + id + ", which it does not hold; ignored");
            return;
        }
        h.release();
    }

    @Override
    public void close() {
        if (!leases.isEmpty()) {
            TreeSet<Long> versions = new TreeSet<>();
            leases.values().forEach(h -> versions.add(h.lease.version()));
            // An inference server that exits (or is restarted) without closing its leases: expected, not a warning.
            LOG.log(
                    System.Logger.Level.INFO,
                    peer + " went away holding " + leases.size() + " lease(s) on " + model + " (versions " + versions
                            + "); released them");
            leases.values().forEach(Held::release);
            leases.clear();
        }
        consumers.leave(model, connection);
    }
}
