package io.viper;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.config.ConfigValues;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.ManifestCodec;
import io.viper.tensor.DType;
import io.viper.testing.InMemoryNotifierProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Producer/consumer orchestration over the in-memory transport and notifier test doubles: publishing, stepping,
 * fetching, and the configuration refused. Leases: {@link LeaseSdkTest}; failures and fallbacks:
 * {@link FallbackSdkTest}.
 */
class ViperSdkTest extends SdkTestBase {
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
            assertArrayEquals(
                    params(1f).get("dense.weight"), m.tensor("dense.weight").toFloatArray());
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
        InMemoryNotifierProvider.injectRaw(
                name,
                "fw",
                ManifestCodec.encode(new io.viper.manifest.Manifest(
                        "fw", 1, "old", 0, first.metadata(), first.tensors(), first.locations())));
        Thread.sleep(300);
        assertEquals(2, consumer.version());
        try (ModelLease m = consumer.current()) {
            assertEquals(2f, m.tensor("dense.bias").toFloatArray()[0]);
        }
    }

    @Test
    void aRestartedProducerNumbersAfterTheVersionsTheNotifierAnnounced() throws Exception {
        try (Viper first = Viper.builder()
                        .notifier("mem://" + name)
                        .transports("mem://" + name + "-a")
                        .build();
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
        ViperNotFoundException missing =
                assertThrows(ViperNotFoundException.class, () -> consumer.fetch(1, Set.of("missing")));
        assertTrue(missing.getMessage().contains("missing"), missing.getMessage());
        assertFalse(missing.isRetriable());
        assertThrows(ViperNotFoundException.class, () -> consumer.fetch(99, Set.of("dense.bias")));
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
            producer.publish(
                    sink -> {
                        sink.add("ids", DType.I32, new long[] {4}, ints);
                        sink.addFloats("scale", new long[] {}, new float[] {0.5f});
                    },
                    Map.of());
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
        assertThrows(
                ViperConfigException.class,
                () -> producer.publish(
                        sink -> {
                            sink.addFloats("w", new long[] {2}, new float[] {1});
                        },
                        Map.of()));
        assertThrows(
                ViperConfigException.class,
                () -> producer.publish(
                        sink -> {
                            sink.addFloats("w", new long[] {1}, new float[] {1});
                            sink.addFloats("w", new long[] {1}, new float[] {1});
                        },
                        Map.of()));
        assertEquals(0, producer.latestVersion());
        assertThrows(
                ViperConfigException.class,
                () -> v.producer("bad", CheckpointPolicy.never()),
                "one producer per model");
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
        assertThrows(
                io.viper.errors.RetriableViperException.class, () -> consumer.awaitVersion(1, Duration.ofMillis(100)));
    }

    @Test
    void configurationIsValidated() {
        assertThrows(
                ViperConfigException.class,
                () -> Viper.builder().config("viper.no.such.key", "1").build());
        assertThrows(
                ViperConfigException.class,
                () -> Viper.builder()
                        .config("viper.consumer.host.budget.bytes", "lots")
                        .build());
        assertThrows(
                ViperConfigException.class,
                () -> Viper.builder().config("viper.pfs.retention", "0").build());
        assertThrows(
                ViperConfigException.class,
                () -> Viper.builder().notifier("no scheme").build());
        assertEquals(3L << 30, ConfigValues.parseSize("3g"));
        assertEquals(512L << 20, ConfigValues.parseSize("512MiB"));
        assertEquals(1536L << 20, ConfigValues.parseSize("1.5g"));
        assertTrue(ViperConfig.keys().containsAll(ViperConfig.coreKeys()));
        ViperConfig c = ViperConfig.of(Map.of("kafka.security.protocol", "SSL"));
        assertEquals(Map.of("security.protocol", "SSL"), c.passthrough("kafka."), "passthrough keys reach plugins");
    }

    @Test
    void unknownAndForeignKeysAreRefusedInOneLineNamingTheNearestKnownKey() {
        assertEquals(
                "unknown configuration key viper.consumer.autolaod (did you mean viper.consumer.autoload?)",
                assertThrows(
                                ViperConfigException.class,
                                () -> ViperConfig.of(Map.of("viper.consumer.autolaod", "true")))
                        .getMessage());
        assertEquals(
                "empty configuration key (with value 'x')",
                assertThrows(ViperConfigException.class, () -> ViperConfig.of(Map.of("", "x")))
                        .getMessage());
        assertEquals(
                "configuration key 'foo.bar' is neither a viper.* key nor a passthrough kafka.<setting> key",
                assertThrows(ViperConfigException.class, () -> ViperConfig.of(Map.of("foo.bar", "1")))
                        .getMessage());
        assertThrows(ViperConfigException.class, () -> ViperConfig.of(Map.of("kafka.", "1")));
    }

    @Test
    void consumerPathsNameInstalledTransportsOnly() {
        assertEquals(
                List.of("mem"),
                ViperConfig.of(Map.of("viper.consumer.paths", "MEM")).get(ViperConfig.CONSUMER_PATHS));
        ViperConfigException e = assertThrows(
                ViperConfigException.class, () -> ViperConfig.of(Map.of("viper.consumer.paths", "mem,bogus")));
        assertTrue(
                e.getMessage()
                        .startsWith("invalid value 'mem,bogus' for viper.consumer.paths: no bogus:// transport is"
                                + " installed (installed: "),
                e.getMessage());
    }

    @Test
    void aProducerWithNoTransportAndNoPfsIsRefused() {
        Viper v = keep(Viper.builder().notifier("mem://" + name).transports().build());
        ViperConfigException e =
                assertThrows(ViperConfigException.class, () -> v.producer("m", CheckpointPolicy.never()));
        assertTrue(
                e.getMessage().startsWith("viper.transports is empty and viper.pfs.root is not set"), e.getMessage());
    }
}
