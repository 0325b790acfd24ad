package io.viper;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.errors.ViperConfigException;
import io.viper.testing.InMemoryNotifierProvider;
import io.viper.testing.InMemoryTransportProvider;
import io.viper.testing.LogCapture;
import io.viper.testing.SdkFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Small versions inside their announcement ({@code viper.producer.inline.bytes}): over a notifier that carries bytes
 * the consumer swaps them in without a transport read, verified as any other; larger ones, a consumer that declines
 * them, and bytes that fail verification go over the transport.
 */
class InlineUpdateTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private final List<SdkFixture> fixtures = new ArrayList<>();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private String testName;

    @BeforeEach
    void setUp(TestInfo info) {
        testName = info.getTestMethod().orElseThrow().getName() + System.nanoTime();
    }

    @AfterEach
    void tearDown() throws Exception {
        for (SdkFixture f : fixtures) {
            f.close();
        }
    }

    /** A fixture (notifier {@code mem://name}, transport {@code mem://name-t}) of its own for each {@code suffix}. */
    private SdkFixture fixture(String suffix) {
        SdkFixture f = new SdkFixture(testName + suffix);
        fixtures.add(f);
        return f;
    }

    /** A producer and a consumer (of their own instances) on a fixture whose notifier carries bytes. */
    private record Pair(ViperProducer producer, ViperConsumer consumer) {}

    private Pair carrying(String... consumerConfig) {
        SdkFixture f = fixture("");
        InMemoryNotifierProvider.carryData(testName, false);
        return new Pair(
                f.keep(f.viper(registry).producer("m", CheckpointPolicy.never())),
                f.keep(f.viper(registry, consumerConfig).consumer("m")));
    }

    private static Map<String, float[]> params(float base) {
        Map<String, float[]> p = new LinkedHashMap<>();
        p.put("w", new float[] {base, base + 1, base + 2, base + 3, base + 4, base + 5});
        p.put("b", new float[] {base, -base});
        return p;
    }

    private static Snapshot snapshot(float base) {
        return Snapshot.ofFloats(params(base), Map.of("w", new long[] {2, 3}, "b", new long[] {2}));
    }

    /** Publishes v1 and v2 from one instance to a consumer of another; returns the consumer's updates. */
    private static List<ModelUpdate> publishTwo(SdkFixture f, Viper producerSide, Viper consumerSide) {
        ViperProducer producer = f.keep(producerSide.producer("m", CheckpointPolicy.never()));
        ViperConsumer consumer = f.keep(consumerSide.consumer("m"));
        List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
        consumer.onUpdate(updates::add);
        producer.publish(snapshot(1f), Map.of());
        consumer.awaitVersion(1, WAIT);
        producer.publish(snapshot(7f), Map.of());
        consumer.awaitVersion(2, WAIT);
        try (ModelLease m = consumer.current()) {
            assertArrayEquals(params(7f).get("w"), m.tensor("w").toFloatArray());
            assertArrayEquals(params(7f).get("b"), m.tensor("b").toFloatArray());
        }
        return updates;
    }

    @Test
    void aSmallVersionArrivesInsideItsAnnouncementWithoutATransportRead() {
        SdkFixture f = fixture("");
        InMemoryNotifierProvider.carryData(testName, false);
        List<ModelUpdate> updates = publishTwo(f, f.viper(registry), f.viper(registry));
        for (ModelUpdate u : updates) {
            assertEquals("inline", u.path(), "v" + u.version());
            assertEquals(32, u.bytes());
        }
        assertEquals(
                0, InMemoryTransportProvider.faults(f.transport()).reads.get(), "nothing was read over the transport");
        assertEquals(
                64,
                registry.find("viper.transfer.bytes")
                        .tag("path", "inline")
                        .counter()
                        .count());
    }

    @Test
    void largerVersionsAndConsumersThatDeclineInlineBytesFetchOverTheTransport() {
        SdkFixture over = fixture("-over");
        InMemoryNotifierProvider.carryData(testName + "-over", false);
        for (ModelUpdate u :
                publishTwo(over, over.viper(registry, "viper.producer.inline.bytes", "31"), over.viper(registry))) {
            assertEquals("mem", u.path(), "32 bytes is over the producer's 31");
        }
        SdkFixture declines = fixture("-declines");
        InMemoryNotifierProvider.carryData(testName + "-declines", false);
        for (ModelUpdate u : publishTwo(
                declines, declines.viper(registry), declines.viper(registry, "viper.consumer.inline", "false"))) {
            assertEquals("mem", u.path(), "the consumer declines inline bytes");
        }
    }

    @Test
    void aNotifierThatCannotCarryBytesAnnouncesTheManifestAlone() {
        SdkFixture f = fixture("");
        for (ModelUpdate u : publishTwo(f, f.viper(registry), f.viper(registry))) {
            assertEquals("mem", u.path());
        }
    }

    @Test
    void inlineBytesThatFailVerificationAreLoggedAndTheVersionIsFetched() throws Exception {
        SdkFixture f = fixture("");
        InMemoryNotifierProvider.carryData(testName, true);
        // The first transport read fails too: the retry fetches v1 without trying its bad bytes again.
        InMemoryTransportProvider.faults(f.transport()).failReads.set(1);
        try (LogCapture log = new LogCapture("io.viper.internal.consumer.Fetcher")) {
            List<ModelUpdate> updates = publishTwo(f, f.viper(registry), f.viper(registry));
            for (ModelUpdate u : updates) {
                assertEquals(
                        "mem", u.path(), "v" + u.version() + " came over the transport after its inline bytes failed");
            }
            // The fallback loop logs the inline location's failure before it tries the next location: once for v1
            // (not again on its retry) and once for v2, both before their swaps.
            List<String> lines = log.formattedLines();
            String failed = "inline:announcement failed (the bytes its announcement carried are not usable";
            assertEquals(
                    2,
                    lines.stream().filter(l -> l.contains(failed)).count(),
                    "each version's bad bytes were tried once: " + lines);
        }
    }

    /**
     * The in-memory notifier hands a publication over in process, as the embedded one does to its broker: a small
     * version is announced before {@code publish} returns, and swapped in by the notifier's delivery thread, not the
     * consumer's fetch thread.
     */
    @Test
    void aSmallVersionIsAnnouncedByThePublishingThreadAndSwappedInByTheNotifiers() {
        Pair pair = carrying();
        ViperProducer producer = pair.producer();
        ViperConsumer consumer = pair.consumer();
        List<String> updateThreads = new CopyOnWriteArrayList<>();
        consumer.onUpdate(u -> updateThreads.add(Thread.currentThread().getName()));
        for (int v = 1; v <= 3; v++) {
            PublishHandle h = producer.publish(snapshot(v), Map.of());
            assertTrue(h.announced().isDone(), "v" + v + " was announced before publish returned");
            consumer.awaitVersion(v, WAIT);
            try (ModelLease m = consumer.current()) {
                assertArrayEquals(params(v).get("w"), m.tensor("w").toFloatArray());
            }
        }
        String delivery = InMemoryNotifierProvider.DELIVERY_THREAD;
        assertEquals(List.of(delivery, delivery, delivery), updateThreads);

        SdkFixture declines = fixture("-declines");
        InMemoryNotifierProvider.carryData(testName + "-declines", false);
        ViperProducer p2 = declines.keep(declines.viper(registry).producer("m", CheckpointPolicy.never()));
        ViperConsumer c2 = declines.keep(
                declines.viper(registry, "viper.consumer.inline", "false").consumer("m"));
        List<String> fetchThreads = new CopyOnWriteArrayList<>();
        c2.onUpdate(u -> fetchThreads.add(Thread.currentThread().getName()));
        p2.publish(snapshot(1f), Map.of());
        c2.awaitVersion(1, WAIT);
        assertEquals(
                List.of("viper-consumer-m"), fetchThreads, "without inline bytes the fetch thread loads and swaps");
    }

    @Test
    void flushWaitsForTheBrokersAnswerToASmallVersionAnnouncedFromThePublishingThread() throws Exception {
        SdkFixture f = fixture("");
        InMemoryNotifierProvider.carryData(testName, false);
        Runnable answer = InMemoryNotifierProvider.holdLocalAnswers(testName);
        ViperProducer producer = f.keep(f.viper(registry).producer("m", CheckpointPolicy.never()));
        PublishHandle h = producer.publish(snapshot(1f), Map.of());
        CompletableFuture<Void> flushed;
        try {
            assertFalse(h.announced().isDone(), "the broker has not answered yet");
            flushed = CompletableFuture.runAsync(
                    producer::flush, r -> Thread.ofPlatform().daemon().start(r));
            assertThrows(
                    TimeoutException.class,
                    () -> flushed.get(300, TimeUnit.MILLISECONDS),
                    "flush waits for the answer");
        } finally {
            answer.run();
        }
        flushed.get(20, TimeUnit.SECONDS);
        assertTrue(
                h.announced().isDone() && !h.announced().isCompletedExceptionally(), "announced once flush returned");
    }

    @Test
    void aSmallVersionPublishedWhileALargerOneIsStillInThePipelineIsAnnouncedAfterIt() {
        Pair pair = carrying();
        ViperProducer producer = pair.producer();
        ViperConsumer consumer = pair.consumer();
        List<Long> announced = new CopyOnWriteArrayList<>();
        consumer.onManifest(m -> announced.add(m.version())); // newer versions only: one overtaken would be missing
        for (int round = 0; round < 5; round++) {
            // 16 MiB to hash on the producer's background thread while the small one is published
            Snapshot large = Snapshot.ofFloats(Map.of("big", new float[4 << 20]), Map.of("big", new long[] {4 << 20}));
            PublishHandle big = producer.publish(large, Map.of());
            PublishHandle small = producer.publish(snapshot(round), Map.of());
            consumer.awaitVersion(small.version(), WAIT);
            assertTrue(
                    big.announced().isDone() && !big.announced().isCompletedExceptionally(),
                    "the large version was announced");
        }
        List<Long> expected = new ArrayList<>();
        for (long v = 1; v <= 10; v++) {
            expected.add(v);
        }
        assertEquals(expected, announced, "every version announced, in order");
    }

    @Test
    @org.junit.jupiter.api.Timeout(60)
    void whenBothReceiveBuffersAreLeasedTheNotifiersThreadDoesNotWaitForOne() throws Exception {
        // A notifier thread that waited for a buffer would deliver nothing more until v1's lease closes.
        Pair pair = carrying("viper.consumer.buffer.wait.ms", "120000");
        ViperProducer producer = pair.producer();
        ViperConsumer consumer = pair.consumer();
        List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
        consumer.onUpdate(updates::add);
        CountDownLatch v4Heard = new CountDownLatch(1);
        consumer.onManifest(m -> {
            if (m.version() == 4) {
                v4Heard.countDown();
            }
        });
        producer.publish(snapshot(1f), Map.of());
        consumer.awaitVersion(1, WAIT);
        ModelLease v1 = consumer.current();
        producer.publish(snapshot(2f), Map.of());
        consumer.awaitVersion(2, WAIT);
        ModelLease v2 = consumer.current();
        producer.publish(snapshot(3f), Map.of()); // v1's lease and the serving v2 hold both buffers
        producer.publish(snapshot(4f), Map.of());
        assertTrue(v4Heard.await(20, TimeUnit.SECONDS), "the notifier went on delivering while no buffer was free");
        try (ModelLease serving = consumer.current()) {
            assertEquals(2, serving.version(), "the newer versions wait for a buffer");
        }
        v1.close();
        v2.close();
        consumer.awaitVersion(4, WAIT);
        try (ModelLease v4 = consumer.current()) {
            assertArrayEquals(params(4f).get("w"), v4.tensor("w").toFloatArray());
        }
        assertEquals(
                "inline",
                updates.getLast().path(),
                "the fetch thread loaded it from the bytes its announcement carried");
    }

    @Test
    void anInlineLimitOverOneMebibyteIsRefusedInOneLine() {
        ViperConfigException e = assertThrows(
                ViperConfigException.class,
                () -> Viper.builder()
                        .notifier("mem://" + testName)
                        .config("viper.producer.inline.bytes", "2m")
                        .build());
        assertEquals(
                "invalid value '2m' for viper.producer.inline.bytes: must be at most 1048576 bytes", e.getMessage());
    }
}
