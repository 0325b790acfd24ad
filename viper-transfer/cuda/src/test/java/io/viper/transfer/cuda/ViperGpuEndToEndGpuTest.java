package io.viper.transfer.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.CheckpointPolicy;
import io.viper.ModelLease;
import io.viper.ModelUpdate;
import io.viper.PublishHandle;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.ViperProducer;
import io.viper.errors.ViperException;
import io.viper.hash.ParallelHash64;
import io.viper.manifest.Manifest;
import io.viper.spi.DeviceBuffer;
import io.viper.tensor.DType;
import io.viper.testing.TestStagedCheckpoint;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The whole GPU path through the SDK: a producer snapshots tensors that live on the GPU (device to device into GPU
 * staging), serves them on cuda-ipc, and a consumer with viper.consumer.device=gpu receives them into GPU memory and
 * verifies them there.
 */
@Tag("gpu")
class ViperGpuEndToEndGpuTest {
    @BeforeEach
    void gpu() {
        GpuTests.assumeGpu();
    }

    @Test
    void gpuTensorsArriveInTheConsumersGpuMemory() {
        String name = "gpu-e2e-" + System.nanoTime();
        long wBytes = (8L << 20) + 4;
        long bBytes = 40;
        try (Arena arena = Arena.ofShared();
                DeviceBuffer w = GpuTests.GPU.allocate(0, wBytes);
                DeviceBuffer b = GpuTests.GPU.allocate(0, bBytes);
                Viper v = Viper.builder()
                        .notifier("mem://" + name)
                        .transports("cuda-ipc://127.0.0.1:0")
                        .config("viper.consumer.device", "gpu")
                        .build();
                ViperProducer producer = v.producer("g", CheckpointPolicy.never());
                ViperConsumer consumer = v.consumer("g")) {
            MemorySegment wHost = arena.allocate(wBytes, 64);
            MemorySegment bHost = arena.allocate(bBytes, 64);
            TestStagedCheckpoint.fill(wHost, 1);
            TestStagedCheckpoint.fill(bHost, 2);
            GpuTests.GPU.copyToDevice(0, wHost, w.devicePointer());
            GpuTests.GPU.copyToDevice(0, bHost, b.devicePointer());
            List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
            consumer.onUpdate(updates::add);
            PublishHandle h = producer.publish(
                    sink -> {
                        sink.addDevice("w", DType.F32, new long[] {wBytes / 4}, w.devicePointer(), 0);
                        sink.addDevice("b", DType.F32, new long[] {bBytes / 4}, b.devicePointer(), 0);
                    },
                    Map.of());
            Manifest m = h.announced().join();
            assertTrue(m.tensors().stream().allMatch(t -> t.phash64().isPresent()), "GPU locations carry phash64");
            assertEquals(ParallelHash64.hash(wHost), m.tensor("w").phash64().getAsLong());
            assertEquals("cuda-ipc", m.locations().getFirst().scheme());
            assertEquals(1, consumer.awaitVersion(1, Duration.ofSeconds(60)));
            try (ModelLease lease = consumer.current()) {
                DeviceBuffer got = lease.device().orElseThrow();
                GpuTests.assertSame(wHost, GpuTests.toHost(got, 0, wBytes, arena), "w");
                GpuTests.assertSame(bHost, GpuTests.toHost(got, wBytes, bBytes, arena), "b");
                assertThrows(ViperException.class, () -> lease.tensor("w"), "a GPU model has no host tensors");
            }
            assertEquals("cuda-ipc", updates.getFirst().path());
            System.out.printf(
                    "gpu end-to-end: stall %.3f ms, transfer %.3f ms, verify %.3f ms for %d bytes%n",
                    h.stallNanos() / 1e6,
                    updates.getFirst().transferMs(),
                    updates.getFirst().verifyMs(),
                    wBytes + bBytes);
        }
    }
}
