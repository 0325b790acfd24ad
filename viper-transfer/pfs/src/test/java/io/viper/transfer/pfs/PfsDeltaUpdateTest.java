package io.viper.transfer.pfs;

import static io.viper.testing.SdkFixture.assertServes;
import static io.viper.testing.SdkFixture.snapshot;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.viper.CheckpointPolicy;
import io.viper.ModelUpdate;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.ViperProducer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.testing.SdkFixture;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A consumer following a model over the PFS alone reads only the blocks of a new version it does not hold. */
class PfsDeltaUpdateTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final long MIB = 1L << 20;

    @TempDir
    Path pfs;

    @Test
    void overTheBlockStoreOnlyTheChangedBlockIsRead() throws Exception {
        try (SdkFixture fx = new SdkFixture("pfs-delta-" + System.nanoTime())) {
            Viper v = fx.keep(Viper.builder().notifier("mem://pfs-delta-" + System.nanoTime()).transports().pfsRoot(pfs)
                    .consumerPaths("file").meterRegistry(new SimpleMeterRegistry()).config("viper.consumer.retry.backoff.ms", "20").build());
            ViperProducer producer = fx.keep(v.producer("m", CheckpointPolicy.never()));
            ViperConsumer consumer = fx.keep(v.consumer("m"));
            List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
            consumer.onUpdate(updates::add);
            List<MemorySegment> v1 = fx.model(1, 3 * MIB, 5000);
            producer.publish(snapshot(v1), Map.of()).durable().join();
            consumer.awaitVersion(1, WAIT);
            List<MemorySegment> v2 = new ArrayList<>();
            for (MemorySegment s : v1) {
                v2.add(fx.arena().allocate(s.byteSize()).copyFrom(s));
            }
            v2.getFirst().set(ValueLayout.JAVA_BYTE, MIB + 1, (byte) ~v2.getFirst().get(ValueLayout.JAVA_BYTE, MIB + 1));
            producer.publish(snapshot(v2), Map.of()).durable().join();
            consumer.awaitVersion(2, WAIT);
            assertServes(consumer, 2, v2);
            assertEquals("file", updates.getLast().path());
            assertEquals(MIB, updates.getLast().bytes(), "only the changed block was read from the block store");
            assertEquals(2 * MIB + 5000, updates.getLast().reusedBytes());
            assertFalse(Files.exists(pfs.resolve("m/2/model.safetensors")), "the version is kept as blocks");
        }
    }
}
