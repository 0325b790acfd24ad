package io.viper.testing;

import io.viper.ViperConfig;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.concurrent.CompletableFuture;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A test double notifier within one JVM ({@code mem://name}): keeps the latest manifest per model,
 * delivers on a single thread per notifier instance, and round-trips manifests through the codec
 * like a real wire would. It announces manifests alone, as a notifier that cannot carry bytes, unless
 * a test asks it to carry them ({@link #carryData}).
 */
public final class InMemoryNotifierProvider implements NotifierProvider {
    private static final Map<String, Broker> BROKERS = new ConcurrentHashMap<>();

    /** The name of the thread that calls a notifier's listeners (one per notifier instance). */
    public static final String DELIVERY_THREAD = "viper-mem-notify";

    /** Publishes raw bytes as if a broken client sent them (the broker decodes and drops them). */
    public static void injectRaw(String name, String model, byte[] raw) {
        BROKERS.computeIfAbsent(name, n -> new Broker()).publishRaw(model, raw);
    }

    /**
     * Makes {@code publishLocally} on notifier {@code mem://name} hand back a future that completes
     * (and delivers) only when the returned {@code Runnable} runs, as a broker's loop that has not
     * got to the publication yet.
     */
    public static Runnable holdLocalAnswers(String name) {
        Broker b = BROKERS.computeIfAbsent(name, n -> new Broker());
        CountDownLatch released = new CountDownLatch(1);
        b.localAnswers = released;
        return released::countDown;
    }

    /**
     * The notifier {@code mem://name} carries the bytes producers attach to small versions
     * ({@link Notifier#publish(Manifest, MemorySegment)}); with {@code corrupt}, it flips the first
     * byte of what it delivers, as a broken broker would.
     */
    public static void carryData(String name, boolean corrupt) {
        Broker b = BROKERS.computeIfAbsent(name, n -> new Broker());
        b.carriesData = true;
        b.corruptsData = corrupt;
    }

    @Override
    public String scheme() {
        return "mem";
    }

    @Override
    public Notifier open(URI uri, Role role, ViperConfig config) {
        Broker b = BROKERS.computeIfAbsent(uri.getAuthority(), n -> new Broker());
        return new Client(uri, b);
    }

    private static final class Broker {
        private final Map<String, byte[]> latest = new ConcurrentHashMap<>();
        private final List<Client.Sub> subs = new CopyOnWriteArrayList<>();
        private final Map<String, byte[]> latestData = new ConcurrentHashMap<>();
        volatile boolean carriesData;
        /** While set and not counted down, local publications wait for it on a thread of their own. */
        volatile CountDownLatch localAnswers;
        volatile boolean corruptsData;

        synchronized void publishRaw(String model, byte[] raw) {
            publishRaw(model, raw, null);
        }

        synchronized void publishRaw(String model, byte[] raw, byte[] data) {
            Manifest m;
            try {
                m = ManifestCodec.decode(raw, "mem broker");
            } catch (RuntimeException e) {
                return;
            }
            latest.put(model, raw);
            if (data == null) {
                latestData.remove(model);
            } else {
                latestData.put(model, data);
            }
            for (Client.Sub s : subs) {
                if (s.model.equals(model)) {
                    s.deliver(m, data);
                }
            }
        }
    }

    private static final class Client implements Notifier {
        private final URI uri;
        private final Broker broker;
        private final ExecutorService delivery = Executors.newSingleThreadExecutor(r -> Thread.ofPlatform().daemon().name(DELIVERY_THREAD).unstarted(r));
        private final List<Sub> mine = new ArrayList<>();

        Client(URI uri, Broker broker) {
            this.uri = uri;
            this.broker = broker;
        }

        @Override
        public URI uri() {
            return uri;
        }

        /** In process: producers announce small versions on the publishing thread, as with a broker they host. */
        @Override
        public boolean publishesLocally() {
            return true;
        }

        /** Delivers on the calling thread, as {@code publish} does, and returns the finished future. */
        @Override
        public CompletableFuture<Void> publishLocally(Manifest manifest, MemorySegment data) {
            CountDownLatch hold = broker.localAnswers;
            if (hold == null) {
                try {
                    publish(manifest, data);
                    return CompletableFuture.completedFuture(null);
                } catch (RuntimeException e) {
                    return CompletableFuture.failedFuture(e);
                }
            }
            MemorySegment copy = MemorySegment.ofArray(data.toArray(ValueLayout.JAVA_BYTE)); // read before returning, as the contract says
            return CompletableFuture.runAsync(() -> {
                try {
                    hold.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                publish(manifest, copy);
            }, r -> Thread.ofPlatform().daemon().name("viper-mem-local-answer").start(r)); // not the common pool, which may have one thread
        }

        @Override
        public void publish(Manifest manifest) {
            broker.publishRaw(manifest.model(), ManifestCodec.encode(manifest));
        }

        @Override
        public void publish(Manifest manifest, MemorySegment data) {
            Notifier.checkInline(manifest, data);
            if (!broker.carriesData) {
                publish(manifest);
                return;
            }
            byte[] bytes = data.toArray(ValueLayout.JAVA_BYTE);
            if (broker.corruptsData && bytes.length > 0) {
                bytes[0] ^= 0x5a;
            }
            broker.publishRaw(manifest.model(), ManifestCodec.encode(manifest), bytes);
        }

        @Override
        public OptionalLong latestVersion(String model) {
            byte[] last = broker.latest.get(model);
            return OptionalLong.of(last == null ? 0 : ManifestCodec.decode(last, "mem broker").version());
        }

        @Override
        public Subscription subscribe(String model, ManifestListener listener) {
            Sub s = new Sub(model, listener);
            synchronized (broker) {
                broker.subs.add(s);
                mine.add(s);
                byte[] last = broker.latest.get(model);
                if (last != null) {
                    s.deliver(ManifestCodec.decode(last, "mem broker"), broker.latestData.get(model));
                }
            }
            return () -> broker.subs.remove(s);
        }

        @Override
        public void close() {
            broker.subs.removeAll(mine);
            delivery.shutdownNow();
        }

        final class Sub {
            final String model;
            final ManifestListener listener;

            Sub(String model, ManifestListener listener) {
                this.model = model;
                this.listener = listener;
            }

            void deliver(Manifest m, byte[] data) {
                if (!delivery.isShutdown()) {
                    delivery.execute(() -> {
                        if (data == null) {
                            listener.onManifest(m);
                        } else {
                            listener.onManifest(m, MemorySegment.ofArray(data).asReadOnly());
                        }
                    });
                }
            }
        }
    }
}
