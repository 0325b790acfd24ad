package io.viper.notify.kafka.internal;

import io.viper.auth.ManifestTrust;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.errors.ViperTimeoutException;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * The {@code kafka://} notifier: {@link #publish} writes the manifest to the compacted topic, keyed by model name, with
 * an idempotent producer and {@code acks=all}, creating the topic first if it is missing; {@link #subscribe} follows
 * the topic with a {@link ManifestFollower}.
 *
 * <p>The client of the opening role is made at once, so that bad client settings fail in {@code open} with a
 * {@link ViperConfigException}; the other is made on first use. Nothing here contacts the cluster before the first
 * publish or subscription: opening never fails because a broker is down.
 */
public final class KafkaNotifier implements Notifier {
    private static final System.Logger LOG = System.getLogger("io.viper.notify.kafka");
    private static final AtomicInteger INSTANCES = new AtomicInteger();
    /** The record header that carries a small version's bytes ({@link #publish(Manifest, MemorySegment)}). */
    public static final String DATA_HEADER = "viper.data";
    /** Room left in a record for its key, header name and framing. */
    private static final int HEADER_ROOM = 64 * 1024;

    private final KafkaUri uri;
    private final KafkaSettings settings;
    private final String clientId;
    private final Object lock = new Object();
    private Producer<String, byte[]> producer;
    private Admin admin;
    private boolean topicReady;
    private Consumer<byte[], byte[]> firstConsumer;
    private ManifestFollower follower;
    /** Signs each record's manifest; the follower and the version scan check them. */
    private final ManifestTrust trust;

    private volatile boolean closed;

    /** Opens a notifier on {@code uri} for {@code role}; see the class comment. */
    public KafkaNotifier(KafkaUri uri, KafkaSettings settings, NotifierProvider.Role role, ManifestTrust trust) {
        this.uri = Objects.requireNonNull(uri, "uri");
        this.trust = Objects.requireNonNull(trust, "trust");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.clientId = "viper-" + ProcessHandle.current().pid() + "-" + INSTANCES.incrementAndGet();
        if (role == NotifierProvider.Role.PRODUCER) {
            producer = newProducer();
        } else {
            firstConsumer = newConsumer();
        }
    }

    @Override
    public URI uri() {
        return uri.toUri();
    }

    @Override
    public void publish(Manifest manifest) {
        publish(manifest, (byte[]) null);
    }

    /**
     * The version's bytes travel in the record's {@link #DATA_HEADER} header, unless record and bytes together pass the
     * message limit.
     */
    @Override
    public void publish(Manifest manifest, MemorySegment data) {
        publish(manifest, Notifier.inlineBytes(manifest, data));
    }

    private void publish(Manifest manifest, byte[] data) {
        Objects.requireNonNull(manifest, "manifest");
        byte[] value = trust.seal(ManifestCodec.encode(manifest));
        if (value.length > KafkaSettings.MAX_MESSAGE_BYTES) {
            throw new ViperFormatException(
                    "manifest " + manifest.model() + " v" + manifest.version(),
                    "encodes to " + value.length + " bytes, more than the Kafka notifier's limit of "
                            + KafkaSettings.MAX_MESSAGE_BYTES);
        }
        Producer<String, byte[]> p;
        synchronized (lock) {
            requireOpen();
            if (producer == null) {
                producer = newProducer();
            }
            if (!topicReady) {
                if (admin == null) {
                    admin = create(
                            () -> Admin.create(settings.adminProperties(uri, clientId + "-admin")), "admin client");
                }
                new TopicCreator(admin, uri, settings).ensureTopic();
                topicReady = true;
            }
            p = producer;
        }
        String what = manifest.model() + " v" + manifest.version();
        try {
            // Bytes that would push the record past the message limit are left out: consumers fetch them.
            boolean withData =
                    data != null && (long) value.length + data.length <= KafkaSettings.MAX_MESSAGE_BYTES - HEADER_ROOM;
            ProducerRecord<String, byte[]> record = withData
                    ? new ProducerRecord<>(
                            uri.topic(), null, manifest.model(), value, List.of(new RecordHeader(DATA_HEADER, data)))
                    : new ProducerRecord<>(uri.topic(), manifest.model(), value);
            Future<RecordMetadata> f = p.send(record);
            // a second past the producer's own bound (delivery.timeout.ms), without overflowing at the key's maximum
            RecordMetadata md =
                    f.get(Math.min(settings.timeoutMs(), Long.MAX_VALUE - 1_000) + 1_000, TimeUnit.MILLISECONDS);
            LOG.log(
                    Level.DEBUG,
                    () -> "published " + what + " to " + md.topic() + "/" + md.partition() + "@" + md.offset());
        } catch (ExecutionException e) {
            throw failure(what, e.getCause() == null ? e : e.getCause());
        } catch (KafkaException e) {
            throw failure(what, e);
        } catch (TimeoutException e) {
            throw new ViperTimeoutException(
                    "Kafka at " + uri.bootstrapServers() + " did not acknowledge manifest " + what + " within "
                            + settings.timeoutMs() + " ms",
                    e);
        } catch (IllegalStateException e) {
            throw new ViperClosedException("Kafka notifier " + uri + " is closed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ViperTimeoutException("interrupted while publishing " + what + " to " + uri, e);
        }
    }

    private ViperException failure(String what, Throwable cause) {
        if (cause instanceof RetriableException || cause instanceof org.apache.kafka.common.errors.TimeoutException) {
            return new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE,
                    "Kafka at " + uri.bootstrapServers() + " did not take manifest " + what + " within "
                            + settings.timeoutMs() + " ms: " + cause.getMessage(),
                    cause);
        }
        return new ViperConfigException(
                "Kafka at " + uri.bootstrapServers() + " refused manifest " + what + ": "
                        + cause.getClass().getSimpleName() + ": " + cause.getMessage(),
                cause);
    }

    /**
     * Reads the topic to its end with a consumer of its own ({@link LatestVersionScan}); empty when the cluster does
     * not answer.
     */
    @Override
    public OptionalLong latestVersion(String model) {
        Manifest.validateModelName(model);
        synchronized (lock) {
            requireOpen();
        }
        return LatestVersionScan.newest(newConsumer(), uri, model, settings.timeoutMs(), trust);
    }

    @Override
    public Subscription subscribe(String model, ManifestListener listener) {
        Manifest.validateModelName(model);
        Objects.requireNonNull(listener, "listener");
        ManifestFollower f;
        synchronized (lock) {
            requireOpen();
            if (follower == null) {
                Consumer<byte[], byte[]> first = firstConsumer != null ? firstConsumer : newConsumer();
                firstConsumer = null;
                AtomicReference<Consumer<byte[], byte[]>> once = new AtomicReference<>(first);
                follower = new ManifestFollower(
                        uri,
                        () -> {
                            Consumer<byte[], byte[]> c = once.getAndSet(null);
                            return c != null ? c : newConsumer();
                        },
                        Math.min(settings.timeoutMs(), 5_000),
                        trust);
                follower.start();
            }
            f = follower;
        }
        return f.subscribe(model, listener);
    }

    @Override
    public void close() {
        ManifestFollower f;
        Producer<String, byte[]> p;
        Admin a;
        Consumer<byte[], byte[]> c;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            f = follower;
            p = producer;
            a = admin;
            c = firstConsumer;
        }
        Duration grace = Duration.ofMillis(Math.min(settings.timeoutMs(), 5_000));
        if (f != null) {
            f.close();
        }
        if (p != null) {
            quietly(() -> p.close(grace));
        }
        if (a != null) {
            quietly(() -> a.close(grace));
        }
        if (c != null) {
            quietly(c::close);
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new ViperClosedException("Kafka notifier " + uri + " is closed");
        }
    }

    private Producer<String, byte[]> newProducer() {
        return create(() -> new KafkaProducer<>(settings.producerProperties(uri, clientId + "-producer")), "producer");
    }

    private Consumer<byte[], byte[]> newConsumer() {
        return create(() -> new KafkaConsumer<>(settings.consumerProperties(uri, clientId + "-consumer")), "consumer");
    }

    private static <T> T create(Supplier<T> maker, String what) {
        try {
            return maker.get();
        } catch (KafkaException e) {
            Throwable root = e;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            throw new ViperConfigException(
                    "cannot create the Kafka " + what + " from the given settings: "
                            + (root == e ? e.getMessage() : e.getMessage() + ": " + root.getMessage()),
                    e);
        }
    }

    private static void quietly(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            LOG.log(Level.DEBUG, "closing a Kafka client failed: {0}", e.toString());
        }
    }
}
