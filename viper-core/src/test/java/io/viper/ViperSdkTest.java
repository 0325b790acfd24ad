package io.viper;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.config.ConfigValues;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.ManifestCodec;
import io.viper.spi.ReadLease;
import io.viper.spi.TransportClient;
import io.viper.tensor.DType;
import io.viper.testing.InMemoryNotifierProvider;
import io.viper.testing.InMemoryTransportProvider;
import io.viper.testing.LogCapture;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Producer/consumer orchestration over the in-memory transport and notifier test doubles. */
class ViperSdkTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private String name;
    private SimpleMeterRegistry registry;

    @BeforeEach
    void setUp(TestInfo info) {
        InMemoryTransportProvider.resetFaults();
        name = info.getTestMethod().orElseThrow().getName() + System.nanoTime();
        registry = new SimpleMeterRegistry();
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    private <T extends AutoCloseable> T keep(T c) {
        closeables.add(c);
        return c;
    }

    private Viper viper(String... transports) {
        Viper.Builder b = Viper.builder().notifier("mem://" + name).meterRegistry(registry);
        b.transports(transports.length == 0 ? new String[] {"mem://" + name + "-a"} : transports);
        return keep(b.build());
    }

    private static Map<String, float[]> params(float base) {
        Map<String, float[]> p = new LinkedHashMap<>();
        float[] w = new float[6];
        for (int i = 0; i < w.length; i++) {
            w[i] = base + i;
        }
        p.put("dense.weight", w);
        p.put("dense.bias", new float[] {base, -base});
        return p;
    }

    private static Snapshot snapshot(float base) {
        return Snapshot.ofFloats(params(base), Map.of("dense.weight", new long[] {2, 3}, "dense.bias", new long[] {2}));
    }

    @Test
    void publishedModelArrivesWithExactTensors() {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("nt3", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("nt3"));
        List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
        consumer.onUpdate(updates::add);
        PublishHandle h = producer.publish(snapshot(1f), Map.of("note", "first"));
        assertEquals(1, h.version());
        assertEquals(1, consumer.awaitVersion(1, WAIT));
        try (ModelLease m = consumer.current()) {
            assertArrayEquals(params(1f).get("dense.weight"), m.tensor("dense.weight").toFloatArray());
            assertArrayEquals(new long[] {2, 3}, m.tensor("dense.weight").shape());
            assertArrayEquals(new float[] {1f, -1f}, m.tensor("dense.bias").toFloatArray());
            assertEquals("first", m.manifest().metadata().get("note"));
            assertThrows(ViperException.class, () -> m.tensor("nope"));
        }
        assertEquals(1, updates.size());
        assertEquals("mem", updates.getFirst().path());
        assertEquals(32, updates.getFirst().bytes());
        assertEquals(0, updates.getFirst().fallbacks());
        assertTrue(registry.find("viper.update.latency").timer().count() >= 1, "update latency recorded");
    }

    @Test
    void stepPublishesOnlyWhenThePolicySaysAndAsksForTheSnapshotOnlyThen() {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("m", CheckpointPolicy.every(3)));
        AtomicInteger described = new AtomicInteger();
        Snapshot counting = sink -> {
            described.incrementAndGet();
            snapshot(2f).describe(sink);
        };
        List<Long> versions = new ArrayList<>();
        for (long it = 1; it <= 9; it++) {
            producer.step(it, 1.0 / it, counting).ifPresent(h -> versions.add(h.version()));
        }
        assertEquals(List.of(1L, 2L, 3L), versions);
        assertEquals(3, described.get(), "snapshot described only for publishing iterations");
        assertThrows(ViperConfigException.class, () -> producer.step(9, 0.1, counting), "iterations must increase");
        producer.flush();
        assertEquals(3, producer.latestVersion());
    }

    @Test
    void stepRecordsIterationAndLossInTheManifest() {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("m", CheckpointPolicy.atIterations(5)));
        ViperConsumer consumer = keep(v.consumer("m"));
        for (long it = 1; it <= 6; it++) {
            producer.step(it, 0.5, snapshot(3f));
        }
        consumer.awaitVersion(1, WAIT);
        try (ModelLease m = consumer.current()) {
            assertEquals("5", m.manifest().metadata().get("viper.iteration"));
            assertEquals("0.5", m.manifest().metadata().get("viper.loss"));
        }
    }

    @Test
    void versionsOnlyMoveForward() throws Exception {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("fw", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("fw"));
        producer.publish(snapshot(1f), Map.of());
        var second = producer.publish(snapshot(2f), Map.of()).announced().get();
        consumer.awaitVersion(2, WAIT);
        // A stale announcement of version 1 arrives late: ignored.
        var first = second.replaceLocations(second.locations());
        InMemoryNotifierProvider.injectRaw(name, "fw", ManifestCodec.encode(new io.viper.manifest.Manifest("fw", 1, "old", 0,
                first.metadata(), first.tensors(), first.locations())));
        Thread.sleep(300);
        assertEquals(2, consumer.version());
        try (ModelLease m = consumer.current()) {
            assertEquals(2f, m.tensor("dense.bias").toFloatArray()[0]);
        }
    }

    @Test
    void aRestartedProducerNumbersAfterTheVersionsTheNotifierAnnounced() throws Exception {
        try (Viper first = Viper.builder().notifier("mem://" + name).transports("mem://" + name + "-a").build();
             ViperProducer p = first.producer("restart", CheckpointPolicy.never())) {
            p.publish(snapshot(1f), Map.of()).announced().get();
            assertEquals(2, p.publish(snapshot(2f), Map.of()).announced().get().version());
        }
        Viper again = viper();
        ViperProducer restarted = keep(again.producer("restart", CheckpointPolicy.never()));
        assertEquals(2, restarted.latestVersion(), "continues after v2, which consumers may hold");
        assertEquals(3, restarted.publish(snapshot(3f), Map.of()).version());
    }

    @Test
    void aRetiredVersionIsWithdrawnOnlyAfterItsLastReadLeaseCloses() throws Exception {
        Viper v = keep(Viper.builder().notifier("mem://" + name).transports("mem://" + name + "-a")
                .config("viper.producer.staging.versions", "1").build());
        ViperProducer producer = keep(v.producer("w", CheckpointPolicy.never()));
        producer.publish(snapshot(1f), Map.of()).announced().get();
        ReadLease reading = InMemoryTransportProvider.lease(name + "-a", "w", 1);
        assertNotNull(reading, "a consumer reads v1");
        producer.publish(snapshot(2f), Map.of()).announced().get();
        producer.publish(snapshot(3f), Map.of()).announced().get();
        producer.flush();
        assertNull(InMemoryTransportProvider.lease(name + "-a", "w", 1), "a retired version takes no new lease");
        Thread.sleep(200);
        assertFalse(InMemoryTransportProvider.withdrawn(name + "-a").contains("w/1"), "not withdrawn while a read holds its lease");
        assertTrue(InMemoryTransportProvider.withdrawn(name + "-a").contains("w/2"), "a retired version without leases is withdrawn");
        reading.close();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!InMemoryTransportProvider.withdrawn(name + "-a").contains("w/1") && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertTrue(InMemoryTransportProvider.withdrawn(name + "-a").contains("w/1"), "withdrawn once the last lease closed");
    }

    @ParameterizedTest
    @ValueSource(strings = {"CORRUPT", "CONFIG"})
    void aFailingLocationIsPassedOverForTheNextOne(String reason) {
        // corrupt bytes; a producer that refuses this consumer's credentials, final only when no location delivers
        String bad = name + "-bad";
        String good = name + "-good";
        Viper v = viper("mem://" + bad, "mem://" + good);
        InMemoryTransportProvider.Faults faults = InMemoryTransportProvider.faults(bad);
        (reason.equals("CORRUPT") ? faults.corruptReads : faults.refuseReads).set(1_000);
        ViperProducer producer = keep(v.producer("c", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("c"));
        List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
        consumer.onUpdate(updates::add);
        List<ViperException> failures = new CopyOnWriteArrayList<>();
        consumer.onFailure(failures::add);
        producer.publish(snapshot(4f), Map.of());
        consumer.awaitVersion(1, WAIT);
        assertEquals(1, updates.getFirst().fallbacks(), "the failing location was tried first and passed over");
        assertEquals("mem://" + good, updates.getFirst().location().uri().toString());
        try (ModelLease m = consumer.current()) {
            assertArrayEquals(params(4f).get("dense.weight"), m.tensor("dense.weight").toFloatArray());
        }
        assertTrue(registry.find("viper.transfer.failures").tag("reason", reason).counter().count() >= 1);
        assertEquals(List.of(), failures, "a version that arrives is no failure");
    }

    @Test
    void failedTransferKeepsTheCurrentModelServingThenRetries() {
        String only = name + "-only";
        Viper v = Viper.builder().notifier("mem://" + name).transports("mem://" + only).meterRegistry(registry)
                .config("viper.consumer.retry.backoff.ms", "50").build();
        keep(v);
        ViperProducer producer = keep(v.producer("r", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("r"));
        producer.publish(snapshot(1f), Map.of());
        consumer.awaitVersion(1, WAIT);
        InMemoryTransportProvider.faults(only).corruptReads.set(2);
        producer.publish(snapshot(2f), Map.of());
        // Two corrupt attempts, then the retry succeeds; meanwhile v1 serves unchanged.
        try (ModelLease m = consumer.current()) {
            assertTrue(m.version() <= 2);
        }
        assertEquals(2, consumer.awaitVersion(2, WAIT));
        try (ModelLease m = consumer.current()) {
            assertArrayEquals(new float[] {2f, -2f}, m.tensor("dense.bias").toFloatArray());
        }
        assertTrue(InMemoryTransportProvider.faults(only).reads.get() >= 3, "retried after failures");
    }

    @Test
    void aProducerThatRefusesTheConsumersCredentialsStopsItFollowingTheModel() throws Exception {
        // it was retried with backoff up to 30 s for ever, as if the producer might change its mind
        String only = name + "-only";
        Viper v = keep(Viper.builder().notifier("mem://" + name).transports("mem://" + only).meterRegistry(registry)
                .config("viper.consumer.retry.backoff.ms", "20").build());
        ViperProducer producer = keep(v.producer("rf", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("rf"));
        BlockingQueue<ViperException> failures = new LinkedBlockingQueue<>();
        consumer.onFailure(failures::add);
        producer.publish(snapshot(1f), Map.of());
        consumer.awaitVersion(1, WAIT);
        InMemoryTransportProvider.Faults faults = InMemoryTransportProvider.faults(only);
        faults.refuseReads.set(1_000);
        int readsBefore = faults.reads.get();
        producer.publish(snapshot(2f), Map.of());

        ViperException failure = failures.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertInstanceOf(ViperConfigException.class, failure, String.valueOf(failure));
        assertEquals("mem read of rf v2: mem://" + only + " refused this client: authentication failed", failure.getMessage());
        assertEquals(readsBefore + 1, faults.reads.get(), "refused once, not retried");
        ViperConfigException wait = assertThrows(ViperConfigException.class, () -> consumer.awaitVersion(2, WAIT));
        assertTrue(wait.getMessage().endsWith("will not arrive (serving v1): " + failure.getMessage()), wait.getMessage());
        try (ModelLease m = consumer.current()) {
            assertArrayEquals(new float[] {1f, -1f}, m.tensor("dense.bias").toFloatArray(), "v1 keeps serving");
        }
        List<ViperException> late = new ArrayList<>();
        consumer.onFailure(late::add);
        assertEquals(List.of(failure), late, "a listener registered later hears it at once");
        ViperConfigException fetch = assertThrows(ViperConfigException.class, () -> consumer.fetch(2, Set.of("dense.bias")));
        assertTrue(TransportClient.refusesConsumer(fetch), fetch.getMessage());
    }

    @Test
    void aStrangerOnTheProducersPortIsRetriedLikeAnyFailure() {
        // not a refusal of credentials: a restarted producer may take its port back
        String only = name + "-only";
        Viper v = keep(Viper.builder().notifier("mem://" + name).transports("mem://" + only).meterRegistry(registry)
                .config("viper.consumer.retry.backoff.ms", "20").build());
        InMemoryTransportProvider.Faults faults = InMemoryTransportProvider.faults(only);
        faults.refuseCredentials = false;
        faults.refuseReads.set(2);
        ViperProducer producer = keep(v.producer("st", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("st"));
        producer.publish(snapshot(5f), Map.of());
        assertEquals(1, consumer.awaitVersion(1, WAIT));
        assertEquals(3, faults.reads.get(), "refused twice, then read");
    }

    @Test
    void theRetryWarningWritesItsBackoffWithoutGroupingSeparators() {
        // "retrying in 30,000 ms": MessageFormat groups the digits of a number among a log call's parameters
        String only = name + "-only";
        Viper v = keep(Viper.builder().notifier("mem://" + name).transports("mem://" + only).meterRegistry(registry)
                .config("viper.consumer.retry.backoff.ms", "1500").build());
        ViperProducer producer = keep(v.producer("r", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("r"));
        InMemoryTransportProvider.faults(only).corruptReads.set(1);
        try (LogCapture log = new LogCapture("io.viper.internal")) {
            producer.publish(snapshot(1f), Map.of());
            assertEquals(1, consumer.awaitVersion(1, WAIT));
            List<String> retries = log.formattedLines().stream().filter(l -> l.contains("not loaded")).toList();
            assertEquals(1, retries.size(), log.formattedLines().toString());
            assertTrue(retries.getFirst().startsWith("consumer r: v1 not loaded: ") && retries.getFirst().endsWith("; retrying in 1500 ms"), retries.getFirst());
        }
    }

    @Test
    void leasesKeepTheirModelIntactWhileNewerVersionsArrive() throws Exception {
        Viper v = Viper.builder().notifier("mem://" + name).transports("mem://" + name + "-a").meterRegistry(registry)
                .config("viper.consumer.buffer.wait.ms", "30000").build();
        keep(v);
        ViperProducer producer = keep(v.producer("l", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("l"));
        producer.publish(snapshot(1f), Map.of());
        consumer.awaitVersion(1, WAIT);
        ModelLease held = consumer.current();
        producer.publish(snapshot(2f), Map.of());
        consumer.awaitVersion(2, WAIT);
        // v3 must go into v1's buffer, which the open lease still holds: it waits.
        producer.publish(snapshot(3f), Map.of());
        Thread.sleep(500);
        assertEquals(2, consumer.version(), "v3 waits for the lease on v1's buffer");
        assertArrayEquals(new float[] {1f, -1f}, held.tensor("dense.bias").toFloatArray(), "the held model is untouched");
        held.close();
        assertEquals(3, consumer.awaitVersion(3, WAIT));
        try (ModelLease m = consumer.current()) {
            assertArrayEquals(new float[] {3f, -3f}, m.tensor("dense.bias").toFloatArray());
        }
        assertThrows(IllegalStateException.class, () -> held.tensor("dense.bias"), "a closed lease refuses access");
    }

    @Test
    void closingAConsumerNamesTheVersionsStillLeasedAndKeepsThemReadable() throws Exception {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("cl", CheckpointPolicy.never()));
        ViperConsumer consumer = v.consumer("cl");
        producer.publish(snapshot(1f), Map.of());
        consumer.awaitVersion(1, WAIT);
        ModelLease held = consumer.current();
        try (LogCapture log = new LogCapture("io.viper.internal")) {
            consumer.close();
            assertTrue(log.lines().stream().anyMatch(l -> l.contains("consumer cl closed while v1 is still leased (1 open lease)")), log.lines().toString());
        }
        assertArrayEquals(new float[] {1f, -1f}, held.tensor("dense.bias").toFloatArray(), "a lease outlives the consumer");
        io.viper.tensor.Tensor bias = held.tensor("dense.bias");
        held.close();
        assertThrows(IllegalStateException.class, () -> bias.getDouble(0), "the buffer is freed with the last lease");
    }

    @Test
    void staleTensorViewsFailAfterTheirVersionIsReleased() {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("s", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("s"));
        producer.publish(snapshot(1f), Map.of());
        consumer.awaitVersion(1, WAIT);
        io.viper.tensor.Tensor stale;
        try (ModelLease m = consumer.current()) {
            stale = m.tensor("dense.bias");
        }
        producer.publish(snapshot(2f), Map.of());
        consumer.awaitVersion(2, WAIT);
        assertThrows(IllegalStateException.class, () -> stale.getDouble(0), "memory of a released version is not readable");
    }

    @Test
    void fetchPullsOnlyTheNamedTensors() {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("f", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("f"));
        producer.publish(snapshot(5f), Map.of());
        consumer.awaitVersion(1, WAIT);
        try (TensorSet set = consumer.fetch(1, Set.of("dense.bias"))) {
            assertEquals(1, set.tensors().size());
            assertArrayEquals(new float[] {5f, -5f}, set.tensor("dense.bias").toFloatArray());
            assertThrows(ViperNotFoundException.class, () -> set.tensor("dense.weight"));
        }
        // unknown tensor and unknown version: NOT_FOUND, as ViperConsumer.fetch promises
        ViperNotFoundException missing = assertThrows(ViperNotFoundException.class, () -> consumer.fetch(1, Set.of("missing")));
        assertTrue(missing.getMessage().contains("missing"), missing.getMessage());
        assertFalse(missing.isRetriable());
        assertThrows(ViperNotFoundException.class, () -> consumer.fetch(99, Set.of("dense.bias")));
    }

    @Test
    void fetchWithoutAutoloadFallsBackPastACorruptLocation() throws Exception {
        String bad = name + "-bad";
        String good = name + "-good";
        Viper v = keep(Viper.builder().notifier("mem://" + name).transports("mem://" + bad, "mem://" + good).meterRegistry(registry)
                .config("viper.consumer.autoload", "false").build());
        InMemoryTransportProvider.faults(bad).corruptReads.set(1_000);
        ViperProducer producer = keep(v.producer("fb", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("fb"));
        CompletableFuture<io.viper.manifest.Manifest> announced = new CompletableFuture<>();
        consumer.onManifest(announced::complete);
        producer.publish(snapshot(6f), Map.of());
        assertEquals(1, announced.get(20, TimeUnit.SECONDS).version());
        try (TensorSet set = consumer.fetch(1, Set.of("dense.bias"))) {
            assertArrayEquals(new float[] {6f, -6f}, set.tensor("dense.bias").toFloatArray());
            assertEquals("mem://" + good, set.location().uri().toString());
            assertEquals(8, set.bytes());
        }
        assertEquals(0, consumer.version(), "without autoload nothing is loaded");
        assertTrue(registry.find("viper.transfer.failures").tag("reason", "CORRUPT").counter().count() >= 1);
    }

    @Test
    void segmentsAndFloatArraysBothWork() {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("seg", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("seg"));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ints = arena.allocate(4 * 4);
            for (int i = 0; i < 4; i++) {
                ints.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, i * 7);
            }
            producer.publish(sink -> {
                sink.add("ids", DType.I32, new long[] {4}, ints);
                sink.addFloats("scale", new long[] {}, new float[] {0.5f});
            }, Map.of());
        }
        consumer.awaitVersion(1, WAIT);
        try (ModelLease m = consumer.current()) {
            assertEquals(21.0, m.tensor("ids").getDouble(3));
            assertEquals(0.5, m.tensor("scale").getDouble(0));
        }
    }

    @Test
    void badSnapshotsAreRefusedWithoutPublishing() {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("bad", CheckpointPolicy.never()));
        assertThrows(ViperConfigException.class, () -> producer.publish(sink -> {
            sink.addFloats("w", new long[] {2}, new float[] {1});
        }, Map.of()));
        assertThrows(ViperConfigException.class, () -> producer.publish(sink -> {
            sink.addFloats("w", new long[] {1}, new float[] {1});
            sink.addFloats("w", new long[] {1}, new float[] {1});
        }, Map.of()));
        assertEquals(0, producer.latestVersion());
        assertThrows(ViperConfigException.class, () -> v.producer("bad", CheckpointPolicy.never()), "one producer per model");
        assertThrows(ViperConfigException.class, () -> v.producer("no/slash", CheckpointPolicy.never()));
    }

    @Test
    void consumerBeforeAnyModelHasNone() {
        Viper v = viper();
        keep(v.producer("early", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("early"));
        assertEquals(0, consumer.version());
        assertEquals(Optional.empty(), consumer.currentIfAny());
        assertThrows(ViperException.class, consumer::current);
        assertThrows(io.viper.errors.RetriableViperException.class, () -> consumer.awaitVersion(1, Duration.ofMillis(100)));
    }

    @Test
    void configurationIsValidated() {
        assertThrows(ViperConfigException.class, () -> Viper.builder().config("viper.no.such.key", "1").build());
        assertThrows(ViperConfigException.class, () -> Viper.builder().config("viper.consumer.host.budget.bytes", "lots").build());
        assertThrows(ViperConfigException.class, () -> Viper.builder().config("viper.pfs.retention", "0").build());
        assertThrows(ViperConfigException.class, () -> Viper.builder().notifier("no scheme").build());
        assertEquals(3L << 30, ConfigValues.parseSize("3g"));
        assertEquals(512L << 20, ConfigValues.parseSize("512MiB"));
        assertEquals(1536L << 20, ConfigValues.parseSize("1.5g"));
        assertTrue(ViperConfig.keys().containsAll(ViperConfig.coreKeys()));
        ViperConfig c = ViperConfig.of(Map.of("kafka.security.protocol", "SSL"));
        assertEquals(Map.of("security.protocol", "SSL"), c.passthrough("kafka."), "passthrough keys reach plugins");
    }

    @Test
    void unknownAndForeignKeysAreRefusedInOneLineNamingTheNearestKnownKey() {
        assertEquals("unknown configuration key viper.consumer.autolaod (did you mean viper.consumer.autoload?)",
                assertThrows(ViperConfigException.class, () -> ViperConfig.of(Map.of("viper.consumer.autolaod", "true"))).getMessage());
        assertEquals("empty configuration key (with value 'x')",
                assertThrows(ViperConfigException.class, () -> ViperConfig.of(Map.of("", "x"))).getMessage());
        assertEquals("configuration key 'foo.bar' is neither a viper.* key nor a passthrough kafka.<setting> key",
                assertThrows(ViperConfigException.class, () -> ViperConfig.of(Map.of("foo.bar", "1"))).getMessage());
        assertThrows(ViperConfigException.class, () -> ViperConfig.of(Map.of("kafka.", "1")));
    }

    @Test
    void consumerPathsNameInstalledTransportsOnly() {
        assertEquals(List.of("mem"), ViperConfig.of(Map.of("viper.consumer.paths", "MEM")).get(ViperConfig.CONSUMER_PATHS));
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> ViperConfig.of(Map.of("viper.consumer.paths", "mem,bogus")));
        assertTrue(e.getMessage().startsWith("invalid value 'mem,bogus' for viper.consumer.paths: no bogus:// transport is installed (installed: "),
                e.getMessage());
    }

    @Test
    void aProducerWithNoTransportAndNoPfsIsRefused() {
        Viper v = keep(Viper.builder().notifier("mem://" + name).transports().build());
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> v.producer("m", CheckpointPolicy.never()));
        assertTrue(e.getMessage().startsWith("viper.transports is empty and viper.pfs.root is not set"), e.getMessage());
    }
}
