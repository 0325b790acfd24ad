package io.viper;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.spi.TransportClient;
import io.viper.testing.InMemoryTransportProvider;
import io.viper.testing.LogCapture;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Failures over the in-memory test doubles: a failing location is passed over for the next one, the current version
 * keeps serving while the consumer retries, and a refusal that trying again cannot change stops it following the model.
 */
class FallbackSdkTest extends SdkTestBase {
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
            assertArrayEquals(
                    params(4f).get("dense.weight"), m.tensor("dense.weight").toFloatArray());
        }
        assertTrue(registry.find("viper.transfer.failures")
                        .tag("reason", reason)
                        .counter()
                        .count()
                >= 1);
        assertEquals(List.of(), failures, "a version that arrives is no failure");
    }

    @Test
    void failedTransferKeepsTheCurrentModelServingThenRetries() {
        String only = name + "-only";
        Viper v = Viper.builder()
                .notifier("mem://" + name)
                .transports("mem://" + only)
                .meterRegistry(registry)
                .config("viper.consumer.retry.backoff.ms", "50")
                .build();
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
        Viper v = keep(Viper.builder()
                .notifier("mem://" + name)
                .transports("mem://" + only)
                .meterRegistry(registry)
                .config("viper.consumer.retry.backoff.ms", "20")
                .build());
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
        assertEquals(
                "mem read of rf v2: mem://" + only + " refused this client: authentication failed",
                failure.getMessage());
        assertEquals(readsBefore + 1, faults.reads.get(), "refused once, not retried");
        ViperConfigException wait = assertThrows(ViperConfigException.class, () -> consumer.awaitVersion(2, WAIT));
        assertTrue(
                wait.getMessage().endsWith("will not arrive (serving v1): " + failure.getMessage()), wait.getMessage());
        try (ModelLease m = consumer.current()) {
            assertArrayEquals(new float[] {1f, -1f}, m.tensor("dense.bias").toFloatArray(), "v1 keeps serving");
        }
        List<ViperException> late = new ArrayList<>();
        consumer.onFailure(late::add);
        assertEquals(List.of(failure), late, "a listener registered later hears it at once");
        ViperConfigException fetch =
                assertThrows(ViperConfigException.class, () -> consumer.fetch(2, Set.of("dense.bias")));
        assertTrue(TransportClient.refusesConsumer(fetch), fetch.getMessage());
    }

    @Test
    void aStrangerOnTheProducersPortIsRetriedLikeAnyFailure() {
        // not a refusal of credentials: a restarted producer may take its port back
        String only = name + "-only";
        Viper v = keep(Viper.builder()
                .notifier("mem://" + name)
                .transports("mem://" + only)
                .meterRegistry(registry)
                .config("viper.consumer.retry.backoff.ms", "20")
                .build());
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
        Viper v = keep(Viper.builder()
                .notifier("mem://" + name)
                .transports("mem://" + only)
                .meterRegistry(registry)
                .config("viper.consumer.retry.backoff.ms", "1500")
                .build());
        ViperProducer producer = keep(v.producer("r", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("r"));
        InMemoryTransportProvider.faults(only).corruptReads.set(1);
        try (LogCapture log = new LogCapture("io.viper.internal")) {
            producer.publish(snapshot(1f), Map.of());
            assertEquals(1, consumer.awaitVersion(1, WAIT));
            List<String> retries = log.formattedLines().stream()
                    .filter(l -> l.contains("not loaded"))
                    .toList();
            assertEquals(1, retries.size(), log.formattedLines().toString());
            String backoff = "(7[5-9]\\d|[89]\\d\\d|1[0-4]\\d\\d|1500)"; // 750-1500 ms (jitter), not grouped
            String line = retries.getFirst();
            assertTrue(line.matches("consumer r: v1 not loaded: .*; retrying in " + backoff + " ms"), line);
        }
    }

    @Test
    void fetchWithoutAutoloadFallsBackPastACorruptLocation() throws Exception {
        String bad = name + "-bad";
        String good = name + "-good";
        Viper v = keep(Viper.builder()
                .notifier("mem://" + name)
                .transports("mem://" + bad, "mem://" + good)
                .meterRegistry(registry)
                .config("viper.consumer.autoload", "false")
                .build());
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
        assertTrue(registry.find("viper.transfer.failures")
                        .tag("reason", "CORRUPT")
                        .counter()
                        .count()
                >= 1);
    }
}
