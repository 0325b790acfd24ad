package io.viper.notify.kafka.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.Notifier;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The follower's delivery rules on Kafka's {@link MockConsumer}: no broker, deterministic records. */
class ManifestFollowerTest {
    private static final String TOPIC = "viper.models";
    private static final TopicPartition TP = new TopicPartition(TOPIC, 0);
    private static final KafkaUri URI_ = KafkaUri.parse(URI.create("kafka://127.0.0.1:1"));

    private final AtomicLong nextOffset = new AtomicLong();
    private ManifestFollower follower;

    @AfterEach
    void close() {
        if (follower != null) {
            follower.close();
        }
    }

    /** A consumer of one partition of {@link #TOPIC} that ends at {@code end}. */
    static MockConsumer<byte[], byte[]> mock(long end) {
        MockConsumer<byte[], byte[]> c = new MockConsumer<>("earliest");
        Node node = new Node(1, "127.0.0.1", 1);
        c.updatePartitions(TOPIC, List.of(new PartitionInfo(TOPIC, 0, node, new Node[] {node}, new Node[] {node})));
        c.updateBeginningOffsets(Map.of(TP, 0L));
        c.updateEndOffsets(Map.of(TP, end));
        return c;
    }

    private ConsumerRecord<byte[], byte[]> record(String key, byte[] value) {
        return new ConsumerRecord<>(
                TOPIC,
                0,
                nextOffset.getAndIncrement(),
                key == null ? null : key.getBytes(StandardCharsets.UTF_8),
                value);
    }

    private ConsumerRecord<byte[], byte[]> record(Manifest m) {
        return record(m.model(), ManifestCodec.encode(m));
    }

    static Manifest manifest(String model, long version, String... locations) {
        var locs = new ArrayList<Location>();
        for (String l : locations) {
            locs.add(new Location(URI.create(l), l.startsWith("file:") ? Tier.PFS : Tier.HOST));
        }
        return new Manifest(
                model,
                version,
                "test",
                1L,
                new LinkedHashMap<>(),
                List.of(new TensorEntry(
                        new TensorInfo("w", DType.F32, new long[] {1}, 0, 4), new ContentHash(version, 1))),
                locs);
    }

    /** Records manifests and problems. */
    private static final class Recorder implements Notifier.ManifestListener {
        final BlockingQueue<Manifest> got = new LinkedBlockingQueue<>();
        final BlockingQueue<String> problems = new LinkedBlockingQueue<>();

        @Override
        public void onManifest(Manifest m) {
            got.add(m);
        }

        @Override
        public void onProblem(String p) {
            problems.add(p);
        }

        Manifest next() throws InterruptedException {
            Manifest m = got.poll(10, TimeUnit.SECONDS);
            assertNotNull(m, "no manifest within 10 s");
            return m;
        }
    }

    @Test
    void catchingUpDeliversOnlyTheLatestThenFollowsAndIgnoresOlderAndMalformed() throws Exception {
        MockConsumer<byte[], byte[]> c = mock(4);
        c.schedulePollTask(() -> {
            c.addRecord(record(manifest("a", 1, "tcp://h:1")));
            c.addRecord(record(manifest("a", 2, "tcp://h:1")));
            c.addRecord(record(manifest("b", 9, "tcp://h:1")));
            c.addRecord(record(manifest("a", 3, "tcp://h:1")));
        });
        follower = new ManifestFollower(URI_, () -> c, 1000);
        Recorder a = new Recorder();
        follower.subscribe("a", a);
        follower.start();
        assertEquals(3, a.next().version(), "the history before subscription collapses to the latest");
        assertNull(a.got.poll(200, TimeUnit.MILLISECONDS));

        c.schedulePollTask(() -> {
            c.addRecord(record(manifest("a", 2, "tcp://h:1"))); // older: ignored
            c.addRecord(record("a", "{\"format\":1}".getBytes(StandardCharsets.UTF_8))); // malformed
            c.addRecord(record("a", ManifestCodec.encode(manifest("b", 10, "tcp://h:1")))); // key and model disagree
            c.addRecord(record(manifest("a", 3, "tcp://h:1"))); // identical: not again
            c.addRecord(record(manifest("a", 3, "tcp://h:1", "file:///pfs/a/3/model.safetensors"))); // location update
            c.addRecord(record(manifest("a", 4, "tcp://h:1")));
        });
        Manifest update = a.next();
        assertEquals(3, update.version());
        assertEquals(2, update.locations().size(), "the same version with more locations is delivered");
        assertEquals(4, a.next().version());
        assertNull(a.got.poll(200, TimeUnit.MILLISECONDS), "nothing older, malformed or repeated");
        String p1 = a.problems.poll(5, TimeUnit.SECONDS);
        String p2 = a.problems.poll(5, TimeUnit.SECONDS);
        assertNotNull(p1);
        assertNotNull(p2);
        assertTrue(p1.contains(TOPIC + "/0@5") && p1.contains("missing field"), p1);
        assertTrue(p2.contains(TOPIC + "/0@6") && p2.contains("does not match"), p2);
    }

    @Test
    void aLateSubscriptionGetsTheCachedLatestAtOnce() throws Exception {
        MockConsumer<byte[], byte[]> c = mock(2);
        c.schedulePollTask(() -> {
            c.addRecord(record(manifest("m", 5, "tcp://h:1")));
            c.addRecord(record(manifest("n", 1, "tcp://h:1")));
        });
        follower = new ManifestFollower(URI_, () -> c, 1000);
        Recorder first = new Recorder();
        follower.subscribe("n", first);
        follower.start();
        assertEquals(1, first.next().version());
        Recorder late = new Recorder();
        follower.subscribe("m", late);
        assertEquals(5, late.next().version(), "the cache answers a subscription made after catch-up");
    }

    @Test
    void aFailingListenerOrConsumerDoesNotStopTheFollower() throws Exception {
        AtomicInteger made = new AtomicInteger();
        MockConsumer<byte[], byte[]> broken = mock(0);
        broken.setPollException(new KafkaException("simulated consumer failure"));
        MockConsumer<byte[], byte[]> good = mock(0);
        follower = new ManifestFollower(URI_, () -> made.getAndIncrement() == 0 ? broken : good, 1000);
        Recorder ok = new Recorder();
        follower.subscribe("x", m -> {
            throw new IllegalStateException("listener bug");
        });
        follower.subscribe("x", ok);
        follower.start();
        assertTrue(
                ok.problems.poll(10, TimeUnit.SECONDS).contains("simulated consumer failure"),
                "the failure is reported");
        good.schedulePollTask(() -> good.addRecord(record(manifest("x", 1, "tcp://h:1"))));
        assertEquals(
                1, ok.next().version(), "a new consumer took over and the other listener's exception changed nothing");
        assertTrue(broken.closed(), "the failed consumer was closed");
        assertEquals(2, made.get());
    }
}
