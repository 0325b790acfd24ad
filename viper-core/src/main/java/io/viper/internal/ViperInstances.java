package io.viper.internal;

import io.viper.CheckpointPolicy;
import io.viper.ViperConsumer;
import io.viper.ViperProducer;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.internal.consumer.ConsumerImpl;
import io.viper.internal.producer.ProducerImpl;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The producers and consumers of one {@code Viper} instance; closes them newest first. Thread-safe. */
public final class ViperInstances implements AutoCloseable {
    private final ViperRuntime rt;
    private final Map<String, ProducerImpl> producers = new LinkedHashMap<>();
    private final List<AutoCloseable> all = new ArrayList<>();
    private boolean closed;

    public ViperInstances(ViperRuntime rt) {
        this.rt = rt;
    }

    public synchronized ViperProducer producer(String model, CheckpointPolicy policy) {
        check();
        if (producers.containsKey(model)) {
            throw new ViperConfigException("a producer for model " + model + " is already open in this Viper instance");
        }
        ProducerImpl p = new ProducerImpl(rt, model, policy, () -> removed(model));
        producers.put(model, p);
        all.add(p);
        return p;
    }

    public synchronized ViperConsumer consumer(String model) {
        check();
        ConsumerImpl[] holder = new ConsumerImpl[1];
        ConsumerImpl c = new ConsumerImpl(rt, model, () -> removed(holder[0]));
        holder[0] = c;
        all.add(c);
        return c;
    }

    private synchronized void removed(Object o) {
        if (o instanceof String model) {
            all.remove(producers.remove(model));
        } else {
            all.remove(o);
        }
    }

    private void check() {
        if (closed) {
            throw new ViperClosedException("this Viper instance is closed");
        }
    }

    @Override
    public void close() {
        List<AutoCloseable> toClose;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            toClose = new ArrayList<>(all);
        }
        for (int i = toClose.size() - 1; i >= 0; i--) {
            try {
                toClose.get(i).close();
            } catch (Exception e) {
                System.getLogger(ViperInstances.class.getName())
                        .log(System.Logger.Level.WARNING, "closing failed: " + e.getMessage());
            }
        }
    }
}
