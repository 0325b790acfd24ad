package io.viper.agent.internal;

import io.viper.CheckpointPolicy;
import io.viper.Viper;
import io.viper.ViperProducer;
import io.viper.errors.ViperConfigException;
import java.util.HashMap;
import java.util.Map;

/**
 * The agent's producers, one per model, each driven by at most one client at a time. A producer outlives its client:
 * the versions a trainer published stay served after it exits, and a trainer that comes back continues the version
 * numbers, until the agent stops. The policy runs in the client ({@code step}), so the Java producer only publishes.
 * Thread-safe.
 */
final class Producers {
    private final Viper viper;
    private final Map<String, ViperProducer> producers = new HashMap<>();
    private final Map<String, String> owners = new HashMap<>();

    Producers(Viper viper) {
        this.viper = viper;
    }

    /**
     * The producer of {@code model} for {@code client}, opened on first use.
     *
     * @throws ViperConfigException when another client drives it now
     */
    synchronized ViperProducer claim(String model, String client) {
        String owner = owners.get(model);
        if (owner != null) {
            throw new ViperConfigException("model " + model + " already has a producer on this agent: " + owner);
        }
        ViperProducer p = producers.get(model);
        if (p == null) {
            p = viper.producer(model, CheckpointPolicy.never());
            producers.put(model, p);
        }
        owners.put(model, client);
        return p;
    }

    /** {@code client} no longer drives the producer of {@code model}; it stays open. */
    synchronized void release(String model, String client) {
        owners.remove(model, client);
    }
}
