package io.viper.agent.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.ModelUpdate;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.errors.ViperException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The agent's consumers, one per model, shared by the clients that follow it: each update is sent to every one of them
 * as an {@code update} event. A consumer that stops following its model (a refusal of its credentials or TLS trust,
 * {@link ViperConsumer#onFailure}) is logged once and its clients, and those that join later, get a {@code failure}
 * event; it keeps serving the version it holds. A consumer is closed when its last client leaves. Thread-safe.
 */
final class Consumers {
    private static final System.Logger LOG = System.getLogger(Consumers.class.getName());

    private final Viper viper;
    private final SharedMemory shm;
    private final SharedReceiveBuffers receive;
    private final Map<String, Followed> followed = new HashMap<>();

    Consumers(Viper viper, SharedMemory shm, SharedReceiveBuffers receive) {
        this.viper = viper;
        this.shm = shm;
        this.receive = receive;
    }

    /** One followed model: the Java consumer, where clients read its versions, and who follows it. */
    static final class Followed {
        final ViperConsumer consumer;
        final ModelFiles files;
        final List<Connection> clients = new CopyOnWriteArrayList<>();
        /** Why this agent cannot follow the model any more, or null; guarded by this. */
        private ViperException failure;

        Followed(ViperConsumer consumer, ModelFiles files) {
            this.consumer = consumer;
            this.files = files;
            // On the consumer's fetch thread: sending only queues the event on each connection.
            consumer.onUpdate(u -> clients.forEach(c -> c.send(event(u))));
            consumer.onFailure(this::failed);
        }

        /** The notifier's or the fetch thread, once: the consumer stopped following the model. */
        private synchronized void failed(ViperException f) {
            failure = ViperException.of(
                    f.reason(), "this agent cannot follow model " + consumer.model() + ": " + f.getMessage(), f);
            LOG.log(
                    System.Logger.Level.ERROR,
                    failure.getMessage() + " (serving v" + consumer.version() + "; its clients are told)");
            clients.forEach(c -> c.send(event(consumer.model(), failure)));
        }

        /** Adds a client; one that joins after the consumer stopped is told at once. */
        private synchronized void join(Connection client) {
            clients.add(client);
            if (failure != null) {
                client.send(event(consumer.model(), failure));
            }
        }

        /** Why this agent cannot follow the model, once its consumer stopped. */
        synchronized Optional<ViperException> failure() {
            return Optional.ofNullable(failure);
        }
    }

    /** {@code client} follows {@code model}; opens its consumer on first use. */
    synchronized Followed follow(String model, Connection client) {
        Followed f = followed.get(model);
        if (f == null) {
            f = new Followed(viper.consumer(model), new ModelFiles(model, shm, receive));
            followed.put(model, f);
        }
        f.join(client);
        return f;
    }

    /** {@code client} stops following; the last one to leave closes the consumer. */
    synchronized void leave(String model, Connection client) {
        Followed f = followed.get(model);
        if (f == null) {
            return;
        }
        f.clients.remove(client);
        if (f.clients.isEmpty()) {
            followed.remove(model);
            f.consumer.close();
            f.files.close();
        }
    }

    static ObjectNode event(String model, ViperException failure) {
        ObjectNode e = Frames.message();
        e.put("event", "failure");
        e.put("model", model);
        e.put("reason", failure.reason().name());
        e.put("message", failure.getMessage());
        return e;
    }

    static ObjectNode event(ModelUpdate u) {
        ObjectNode e = Frames.message();
        e.put("event", "update");
        e.put("model", u.model());
        e.put("version", u.version());
        e.put("previous", u.previous());
        e.put("path", u.path());
        e.put("bytes", u.bytes());
        e.put("reused_bytes", u.reusedBytes());
        e.put("latency_ms", u.latencyMs());
        return e;
    }
}
