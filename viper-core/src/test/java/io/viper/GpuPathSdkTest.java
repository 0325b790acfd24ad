package io.viper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperException;
import io.viper.hash.ParallelHash64;
import io.viper.manifest.Manifest;
import io.viper.spi.DeviceBuffer;
import io.viper.tensor.DType;
import io.viper.testing.FakeGpuProvider;
import io.viper.testing.InMemoryGpuTransportProvider;
import io.viper.testing.InMemoryTransportProvider;
import io.viper.testing.LogCapture;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The GPU path of the producer and consumer (staging on the GPU, GPU tier selection, receive into device memory,
 * on-device verification, fallbacks) over a fake GPU whose device memory is host memory: the orchestration logic,
 * runnable on every build. The real CUDA code is covered by the gpu-tagged tests in viper-transfer-cuda.
 */
class GpuPathSdkTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private String name;

    @BeforeEach
    void setUp(TestInfo info) {
        InMemoryTransportProvider.resetFaults();
        name = info.getTestMethod().orElseThrow().getName() + System.nanoTime();
        FakeGpuProvider.enable(1L << 30);
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
        FakeGpuProvider.refusePinning(false);
        FakeGpuProvider.disable();
        assertEquals(0, FakeGpuProvider.pinnedBytes(), "staging buffers are unpinned when freed");
    }

    private <T extends AutoCloseable> T keep(T c) {
        closeables.add(c);
        return c;
    }

    private Viper viper(String device, String gpuBudget) {
        return keep(Viper.builder()
                .notifier("mem://" + name)
                .transports("memgpu://" + name + "-g", "mem://" + name + "-h")
                .config("viper.consumer.device", device)
                .config("viper.consumer.gpu.budget.bytes", gpuBudget)
                .build());
    }

    /** A "GPU tensor": fake device memory holding {@code n} floats i * scale. */
    private DeviceBuffer deviceTensor(int n, float scale) {
        DeviceBuffer b = keep(new FakeGpuProvider().allocate(0, 4L * n));
        MemorySegment s = FakeGpuProvider.at(b.devicePointer(), 4L * n);
        for (int i = 0; i < n; i++) {
            s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 4L * i, i * scale);
        }
        return b;
    }

    private static Snapshot snapshot(DeviceBuffer w, int n, float[] bias) {
        return sink -> {
            sink.addDevice("w", DType.F32, new long[] {n}, w.devicePointer(), 0);
            sink.addFloats("b", new long[] {bias.length}, bias);
        };
    }

    private static float[] floats(MemorySegment s) {
        return s.toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
    }

    @Test
    void gpuTensorsAreStagedOnTheGpuAndArriveInGpuMemoryVerified() {
        Viper v = viper("gpu", "64m");
        ViperProducer p = keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer c = keep(v.consumer("m"));
        List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
        c.onUpdate(updates::add);
        int n = 1000;
        DeviceBuffer w = deviceTensor(n, 0.5f);
        PublishHandle h = p.publish(snapshot(w, n, new float[] {7, 8}), Map.of());
        Manifest m = h.announced().join();
        assertEquals(
                1, InMemoryGpuTransportProvider.DEVICE_EXPOSED.get(name + "-g").get(), "version staged in GPU memory");
        assertTrue(
                FakeGpuProvider.pinnedBytes() >= 4L * n + 8,
                "the host copy's staging buffer was pinned in the background");
        assertEquals(
                ParallelHash64.hash(FakeGpuProvider.at(w.devicePointer(), 4L * n)),
                m.tensor("w").phash64().getAsLong());
        assertTrue(m.tensor("b").phash64().isPresent());
        assertEquals(
                List.of("memgpu", "mem"),
                m.locations().stream().map(l -> l.scheme()).toList());
        assertEquals(1, c.awaitVersion(1, WAIT));
        try (ModelLease lease = c.current();
                Arena arena = Arena.ofConfined()) {
            DeviceBuffer got = lease.device().orElseThrow();
            float[] all = floats(FakeGpuProvider.at(got.devicePointer(), got.byteSize()));
            assertEquals(n + 2, all.length);
            assertEquals(0.5f * 999, all[999]);
            assertEquals(7f, all[1000]);
            assertEquals(8f, all[1001]);
            ViperException e = assertThrows(ViperException.class, () -> lease.tensor("w"));
            assertTrue(e.getMessage().contains("ModelLease.device()"), e.getMessage());
        }
        assertEquals("memgpu", updates.getFirst().path());
        // The host copy the producer made in the background serves host consumers too.
        try (TensorSet t = c.fetch(1, Set.of("w"))) {
            assertEquals(0.5f * 999, t.tensor("w").toFloatArray()[999]);
        }
    }

    @Test
    void withoutRoomOnTheGpuTheProducerStagesOnTheHost() {
        Viper v = viper("gpu", "64m");
        ViperProducer p = keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer c = keep(v.consumer("m"));
        DeviceBuffer w = deviceTensor(100, 1f);
        FakeGpuProvider.enable(FakeGpuProvider.used() + 1000);
        p.publish(snapshot(w, 100, new float[] {1}), Map.of()).announced().join();
        assertEquals(null, InMemoryGpuTransportProvider.DEVICE_EXPOSED.get(name + "-g"), "not staged in GPU memory");
        FakeGpuProvider.enable(1L << 30);
        assertEquals(1, c.awaitVersion(1, WAIT));
        try (ModelLease lease = c.current()) {
            DeviceBuffer got = lease.device().orElseThrow();
            assertEquals(99f, floats(FakeGpuProvider.at(got.devicePointer(), got.byteSize()))[99]);
        }
    }

    @Test
    void corruptGpuCopyFallsBackToTheHostPath() {
        Viper v = viper("gpu", "64m");
        ViperProducer p = keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer c = keep(v.consumer("m"));
        InMemoryGpuTransportProvider.CORRUPT.put(name + "-g", new AtomicInteger(1));
        List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
        c.onUpdate(updates::add);
        DeviceBuffer w = deviceTensor(256, 2f);
        long before = FakeGpuProvider.used();
        p.publish(snapshot(w, 256, new float[] {3}), Map.of());
        assertEquals(1, c.awaitVersion(1, WAIT));
        assertEquals("mem", updates.getFirst().path());
        assertEquals(1, updates.getFirst().fallbacks());
        try (ModelLease lease = c.current()) {
            assertTrue(lease.device().isEmpty(), "served from host memory after the GPU copy failed its check");
            assertEquals(2f * 255, lease.tensor("w").toFloatArray()[255]);
        }
        // The consumer's GPU buffer of the corrupt copy was freed (only the producer's staging remains).
        assertTrue(
                FakeGpuProvider.used() - before <= 256 * 4 + 4 + 64,
                "GPU memory leaked: " + (FakeGpuProvider.used() - before));
    }

    /** A viper whose versions have blocks of 4 KiB, for delta loads into GPU memory. */
    private Viper viperWithBlocks() {
        return keep(Viper.builder()
                .notifier("mem://" + name)
                .transports("memgpu://" + name + "-g", "mem://" + name + "-h")
                .config("viper.consumer.device", "gpu")
                .config("viper.consumer.gpu.budget.bytes", "64m")
                .config("viper.block.bytes", "4096")
                .build());
    }

    /**
     * Publishes v1 and v2 of a 64 KiB GPU tensor of which v2 changed one float, in block 5; returns the consumer's
     * updates.
     */
    private List<ModelUpdate> twoVersionsOneBlockChanged(Viper v, int corruptReads) {
        ViperProducer p = keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer c = keep(v.consumer("m"));
        List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
        c.onUpdate(updates::add);
        int n = 16 * 1024;
        DeviceBuffer w = deviceTensor(n, 1f);
        p.publish(snapshot(w, n, new float[] {7, 8}), Map.of());
        assertEquals(1, c.awaitVersion(1, WAIT));
        FakeGpuProvider.at(w.devicePointer(), 4L * n).set(ValueLayout.JAVA_FLOAT_UNALIGNED, 4L * (5 * 1024 + 3), -1f);
        InMemoryGpuTransportProvider.CORRUPT.put(name + "-g", new AtomicInteger(corruptReads));
        p.publish(snapshot(w, n, new float[] {7, 8}), Map.of());
        assertEquals(2, c.awaitVersion(2, WAIT));
        try (ModelLease lease = c.current()) {
            DeviceBuffer got = lease.device().orElseThrow();
            float[] all = floats(FakeGpuProvider.at(got.devicePointer(), got.byteSize()));
            assertEquals(-1f, all[5 * 1024 + 3], "the changed block");
            assertEquals(5f * 1024 + 2, all[5 * 1024 + 2]);
            assertEquals(n - 1f, all[n - 1], "a block copied from v1 on the device");
            assertEquals(8f, all[n + 1]);
        }
        return updates;
    }

    @Test
    void aGpuConsumerCopiesTheBlocksItHoldsOnTheDeviceAndPullsTheRest() {
        List<ModelUpdate> updates = twoVersionsOneBlockChanged(viperWithBlocks(), 0);
        ModelUpdate second = updates.get(1);
        assertEquals("memgpu", second.path());
        long total = 16 * 1024 * 4 + 8;
        assertEquals(4096, second.bytes(), "only the changed block was read");
        assertEquals(total - 4096, second.reusedBytes(), "every other block was copied from v1 on the device");
    }

    @Test
    void aGpuDeltaThatDoesNotVerifyIsPulledWhole() {
        try (LogCapture log = new LogCapture("io.viper.internal.consumer.DeviceLoader")) {
            List<ModelUpdate> updates = twoVersionsOneBlockChanged(viperWithBlocks(), 1);
            ModelUpdate second = updates.get(1);
            assertEquals("memgpu", second.path(), "refetched from the same GPU location");
            assertEquals(0, second.reusedBytes());
            assertEquals(4096 + 16 * 1024 * 4 + 8, second.bytes(), "the block pulled, then the whole version");
            assertTrue(
                    String.join("\n", log.lines()).contains("did not verify"),
                    log.lines().toString());
        }
    }

    @Test
    void gpuBudgetTooSmallOrHostConsumerUseTheHostTier() {
        Viper v = viper("gpu", "100");
        ViperProducer p = keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer small = keep(v.consumer("m"));
        p.publish(snapshot(deviceTensor(64, 1f), 64, new float[] {1}), Map.of());
        assertEquals(1, small.awaitVersion(1, WAIT));
        try (ModelLease lease = small.current()) {
            assertTrue(lease.device().isEmpty(), "model of 260 bytes exceeds the 100-byte GPU budget");
            assertEquals(63f, lease.tensor("w").toFloatArray()[63]);
        }
        Viper hostSide =
                keep(Viper.builder().notifier("mem://" + name).transports().build());
        ViperConsumer host = keep(hostSide.consumer("m"));
        assertEquals(1, host.awaitVersion(1, WAIT));
        try (ModelLease lease = host.current()) {
            assertTrue(lease.device().isEmpty());
        }
    }

    @Test
    void gpuModelMemoryIsFreedWhenReplacedAndLeasesClose() {
        Viper v = viper("gpu", "64m");
        ViperProducer p = keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer c = keep(v.consumer("m"));
        DeviceBuffer w = deviceTensor(1024, 1f);
        p.publish(snapshot(w, 1024, new float[] {1}), Map.of());
        assertEquals(1, c.awaitVersion(1, WAIT));
        ModelLease held = c.current();
        DeviceBuffer v1 = held.device().orElseThrow();
        float[] v1Bytes = floats(FakeGpuProvider.at(v1.devicePointer(), v1.byteSize()));
        p.publish(snapshot(w, 1024, new float[] {2}), Map.of());
        assertEquals(2, c.awaitVersion(2, WAIT));
        // The held lease keeps v1 intact on the GPU while v2 serves.
        assertEquals(v1Bytes[1024], floats(FakeGpuProvider.at(v1.devicePointer(), v1.byteSize()))[1024]);
        long withBoth = FakeGpuProvider.used();
        held.close();
        assertEquals(withBoth - v1.byteSize(), FakeGpuProvider.used(), "v1's GPU buffer freed with its last lease");
    }

    @Test
    void hostStagingOfGpuTensorsIsPinnedOncePerBufferAndUnpinnedOnClose() throws Exception {
        Viper v = viper("gpu", "64m");
        ViperProducer p = keep(v.producer("m", CheckpointPolicy.never()));
        DeviceBuffer w = deviceTensor(100, 1f);
        FakeGpuProvider.enable(FakeGpuProvider.used() + 1000);
        p.publish(snapshot(w, 100, new float[] {1}), Map.of()).announced().join();
        long pinned = FakeGpuProvider.pinnedBytes();
        assertTrue(pinned >= 404, "the staging buffer is pinned: " + pinned);
        p.publish(snapshot(w, 100, new float[] {2}), Map.of()).announced().join();
        p.publish(snapshot(w, 100, new float[] {3}), Map.of()).announced().join();
        // Each buffer is pinned once; keep.versions bounds how many exist.
        assertTrue(
                FakeGpuProvider.pinnedBytes() <= 4 * pinned,
                "pinned again per version: " + FakeGpuProvider.pinnedBytes());
        p.close();
        assertEquals(0, FakeGpuProvider.pinnedBytes(), "closing the producer unpins its staging");
    }

    @Test
    void whenTheDriverRefusesToPinStagingStaysPageableAndStillWorks() throws Exception {
        Viper v = viper("gpu", "64m");
        ViperProducer p = keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer c = keep(v.consumer("m"));
        DeviceBuffer w = deviceTensor(100, 1f);
        FakeGpuProvider.refusePinning(true);
        FakeGpuProvider.enable(FakeGpuProvider.used() + 1000);
        try (LogCapture log = new LogCapture("io.viper.internal")) {
            p.publish(snapshot(w, 100, new float[] {1}), Map.of()).announced().join();
            assertTrue(log.await("stays in pageable memory"), log.lines().toString());
        }
        assertEquals(0, FakeGpuProvider.pinnedBytes());
        FakeGpuProvider.enable(1L << 30);
        assertEquals(1, c.awaitVersion(1, WAIT));
        try (ModelLease lease = c.current()) {
            DeviceBuffer got = lease.device().orElseThrow();
            assertEquals(99f, floats(FakeGpuProvider.at(got.devicePointer(), got.byteSize()))[99]);
        }
    }
}
