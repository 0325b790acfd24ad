package io.viper.testing;

import io.viper.ViperConfig;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.spi.AnnouncementFeed;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

/**
 * A test double notifier within one JVM ({@code mem://name}): its broker keeps the latest manifest per model (encoded,
 * as a real wire carries it) and sends it to the notifiers that follow the model; each notifier feeds what it gets to
 * an {@link AnnouncementFeed} on its single delivery thread, which also calls the listeners. It announces manifests
 * alone, as a notifier that cannot carry bytes, unless a test asks it to carry them ({@link #carryData}).
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
     * Makes {@code publishLocally} on notifier {@code mem://name} hand back a future that completes (and delivers) only
     * when the returned {@code Runnable} runs, as a broker's loop that has not got to the publication yet.
     */
    public static Runnable holdLocalAnswers(String name) {
        Broker b = BROKERS.computeIfAbsent(name, n -> new Broker());
        CountDownLatch released = new CountDownLatch(1);
        b.localAnswers = released;
        return released::countDown;
    }

    /**
     * The notifier {@code mem://name} carries the bytes producers attach to small versions
     * ({@link Notifier#publish(Manifest, MemorySegment)}); with {@code corrupt}, it flips the first byte of what it
     * delivers, as a broken broker would.
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
        private final Map<String, byte[]> latestData = new ConcurrentHashMap<>();
        /** Per model, the notifiers that follow it. */
        private final Map<String, List<Client>> followers = new ConcurrentHashMap<>();

        volatile boolean carriesData;
        /** While set and not counted down, local publications wait for it on a thread of their own. */
        volatile CountDownLatch localAnswers;

        volatile boolean corruptsData;

        synchronized void publishRaw(String model, byte[] raw) {
            publishRaw(model, raw, null);
        }

        /** Keeps and forwards what decodes; drops the rest, as a broker checking publications does. */
        synchronized void publishRaw(String model, byte[] raw, byte[] data) {
            try {
                ManifestCodec.decode(raw, "mem broker");
            } catch (RuntimeException e) {
                return;
            }
            latest.put(model, raw);
            if (data == null) {
                latestData.remove(model);
            } else {
                latestData.put(model, data);
            }
            for (Client c : followers.getOrDefault(model, List.of())) {
                c.announce(model, raw, data);
            }
        }

        /** {@code c} follows {@code model} from now on, starting with its latest. */
        synchronized void follow(String model, Client c) {
            followers.computeIfAbsent(model, m -> new CopyOnWriteArrayList<>()).add(c);
            byte[] last = latest.get(model);
            if (last != null) {
                c.announce(model, last, latestData.get(model));
            }
        }

        synchronized void unfollow(String model, Client c) {
            followers.getOrDefault(model, List.of()).remove(c);
        }
    }

    private static final class Client implements Notifier, AnnouncementFeed.Demand {
        private final URI uri;
        private final Broker broker;
        private final ExecutorService delivery = Executors.newSingleThreadExecutor(
                r -> Thread.ofPlatform().daemon().name(DELIVERY_THREAD).unstarted(r));
        /** Listeners run on the delivery thread, which is the feed's. */
        private final AnnouncementFeed feed;

        Client(URI uri, Broker broker) {
            this.uri = uri;
            this.broker = broker;
            this.feed = new AnnouncementFeed(
                    "mem notifier " + uri,
                    System.getLogger(InMemoryNotifierProvider.class.getName()),
                    delivery,
                    Runnable::run,
                    this);
        }

        /** From the broker: hands an announcement to the feed on the delivery thread. */
        void announce(String model, byte[] raw, byte[] data) {
            try {
                delivery.execute(() -> feed.offer(model, raw, data, "mem manifest of " + model));
            } catch (RejectedExecutionException e) {
                // Closed: nothing is delivered any more.
            }
        }

        @Override
        public void follow(String model) {
            broker.follow(model, this);
        }

        @Override
        public void unfollow(String model) {
            broker.unfollow(model, this);
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
            MemorySegment copy = MemorySegment.ofArray(
                    data.toArray(ValueLayout.JAVA_BYTE)); // read before returning, as the contract says
            return CompletableFuture.runAsync(
                    () -> {
                        try {
                            hold.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        publish(manifest, copy);
                    },
                    r -> Thread.ofPlatform()
                            .daemon()
                            .name("viper-mem-local-answer")
                            .start(r)); // not the common pool, which may have one thread
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
            return OptionalLong.of(
                    last == null ? 0 : ManifestCodec.decode(last, "mem broker").version());
        }

        @Override
        public Subscription subscribe(String model, ManifestListener listener) {
            return feed.subscribe(model, listener);
        }

        @Override
        public void close() {
            feed.close();
            for (List<Client> followers : broker.followers.values()) {
                followers.remove(this);
            }
            delivery.shutdownNow();
        }
    }
}
