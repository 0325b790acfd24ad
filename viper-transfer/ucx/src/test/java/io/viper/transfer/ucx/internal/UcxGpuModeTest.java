package io.viper.transfer.ucx.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.viper.CheckpointPolicy;
import io.viper.ModelLease;
import io.viper.ModelUpdate;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperConsumer;
import io.viper.ViperProducer;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.DeviceBuffer;
import io.viper.tensor.DType;
import io.viper.testing.DeviceStagedCheckpoint;
import io.viper.testing.FakeGpuProvider;
import io.viper.testing.TestStagedCheckpoint;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The ucx-cuda code (UCX server and client in GPU mode) with real UCX over a fake GPU whose device memory is host
 * memory: GPU-staged versions are served from the GPU staging buffer, reads land in the consumer's device buffer, and
 * the SDK picks the location on the GPU tier. The CUDA memory type itself needs a UCX built with CUDA and a GPU
 * (UcxCudaGpuTest).
 */
class UcxGpuModeTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private final FakeGpuProvider gpu = new FakeGpuProvider();
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @BeforeEach
    void setUp() {
        assumeTrue(
                UcxNative.unavailableReason().isEmpty(),
                () -> "UCX unavailable here: " + UcxNative.unavailableReason().orElse(""));
        FakeGpuProvider.enable(1L << 30);
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
        FakeGpuProvider.disable();
    }

    private <T extends AutoCloseable> T keep(T c) {
        closeables.add(c);
        return c;
    }

    /**
     * A version staged on the (fake) GPU whose GPU copy holds different bytes from its host copy, to see which one is
     * served.
     */
    private DeviceStagedCheckpoint gpuStaged(long version, long hostSeed, long deviceSeed, long... sizes) {
        TestStagedCheckpoint host = keep(new TestStagedCheckpoint("g", version, hostSeed, sizes));
        DeviceBuffer d = keep(gpu.allocate(0, Math.max(1, host.data().byteSize())));
        TestStagedCheckpoint.fill(
                FakeGpuProvider.at(d.devicePointer(), host.data().byteSize()), deviceSeed);
        return new DeviceStagedCheckpoint(host, d);
    }

    private static MemorySegment bytes(DeviceBuffer b, long offset, long length) {
        return FakeGpuProvider.at(b.devicePointer() + offset, length);
    }

    @Test
    void gpuStagedVersionsAreReadFromTheGpuStagingBufferIntoDeviceMemory() {
        UcxServer server = keep(UcxServer.open(
                URI.create("ucx-fakegpu://127.0.0.1:0"), ViperConfig.defaults(), FakeGpuUcxTransportProvider.MODE));
        UcxClient client = keep(UcxClient.open(ViperConfig.defaults(), FakeGpuUcxTransportProvider.MODE));
        assertEquals(Tier.GPU, server.location().tier());
        assertEquals("ucx-fakegpu", server.location().scheme());
        assertTrue(server.stagingAllocator().isEmpty(), "the GPU mode leaves host staging to the host transports");
        DeviceStagedCheckpoint s = gpuStaged(1, 1, 2, 3000, 5000, 70_000);
        server.expose(s);
        long total = s.data().byteSize();
        DeviceBuffer dst = keep(gpu.allocate(0, total));
        client.readToDevice(s.manifest(), server.location(), List.of(new ByteRange(0, total, 0)), dst);
        assertEquals(
                -1, bytes(s.deviceCopy(), 0, total).mismatch(bytes(dst, 0, total)), "the GPU staging copy arrived");
        // A subset (the second tensor) at an offset of the destination.
        DeviceBuffer part = keep(gpu.allocate(0, 6000));
        client.readToDevice(s.manifest(), server.location(), List.of(new ByteRange(3000, 5000, 1000)), part);
        assertEquals(-1, bytes(s.deviceCopy(), 3000, 5000).mismatch(bytes(part, 1000, 5000)));
        assertEquals(0, s.host().openLeases(), "leases released after each read");
        // Host destinations work too, from the same registration.
        MemorySegment host = keep(Arena.ofShared()).allocate(total);
        client.read(s.manifest(), server.location(), List.of(new ByteRange(0, total, 0)), host);
        assertEquals(-1, bytes(s.deviceCopy(), 0, total).mismatch(host));
        server.withdraw(s);
        assertThrows(
                ViperNotFoundException.class,
                () -> client.readToDevice(s.manifest(), server.location(), List.of(new ByteRange(0, total, 0)), dst));
    }

    @Test
    void hostStagedVersionsAreServedFromHostMemoryIntoDeviceMemory() {
        UcxServer server = keep(UcxServer.open(
                URI.create("ucx-fakegpu://127.0.0.1:0"), ViperConfig.defaults(), FakeGpuUcxTransportProvider.MODE));
        UcxClient client = keep(UcxClient.open(ViperConfig.defaults(), FakeGpuUcxTransportProvider.MODE));
        TestStagedCheckpoint s = keep(new TestStagedCheckpoint("h", 1, 9, 1 << 20));
        server.expose(s);
        DeviceBuffer dst = keep(gpu.allocate(0, 1 << 20));
        client.readToDevice(s.manifest(), server.location(), List.of(new ByteRange(0, 1 << 20, 0)), dst);
        assertEquals(-1, s.data().mismatch(bytes(dst, 0, 1 << 20)));
    }

    @Test
    void misuseIsRefusedWithOneClearLine() {
        UcxServer server = keep(UcxServer.open(
                URI.create("ucx-fakegpu://127.0.0.1:0"), ViperConfig.defaults(), FakeGpuUcxTransportProvider.MODE));
        UcxClient gpuClient = keep(UcxClient.open(ViperConfig.defaults(), FakeGpuUcxTransportProvider.MODE));
        UcxClient hostClient = keep(UcxClient.open(ViperConfig.defaults()));
        DeviceStagedCheckpoint s = gpuStaged(1, 1, 2, 4096);
        server.expose(s);
        DeviceBuffer dst = keep(gpu.allocate(0, 4096));
        List<ByteRange> all = List.of(new ByteRange(0, 4096, 0));
        ViperException e = assertThrows(
                ViperException.class, () -> hostClient.readToDevice(s.manifest(), server.location(), all, dst));
        assertEquals(ViperException.Reason.UNSUPPORTED, e.reason());
        ViperConfigException wrongScheme = assertThrows(
                ViperConfigException.class,
                () -> gpuClient.readToDevice(
                        s.manifest(), new Location(URI.create("ucx://127.0.0.1:1"), Tier.HOST), all, dst));
        assertTrue(wrongScheme.getMessage().contains("is not a ucx-fakegpu:// location"), wrongScheme.getMessage());
        DeviceBuffer small = keep(gpu.allocate(0, 100));
        ViperConfigException tooSmall = assertThrows(
                ViperConfigException.class, () -> gpuClient.readToDevice(s.manifest(), server.location(), all, small));
        assertTrue(tooSmall.getMessage().contains("exceeds the destination's 100 bytes"), tooSmall.getMessage());
        ViperConfigException badBind = assertThrows(
                ViperConfigException.class,
                () -> UcxServer.open(
                        URI.create("ucx://127.0.0.1:0"), ViperConfig.defaults(), FakeGpuUcxTransportProvider.MODE));
        assertTrue(badBind.getMessage().contains("is not a ucx-fakegpu:// URI"), badBind.getMessage());
    }

    @Test
    void theSdkStagesOnTheGpuServesOverUcxAndTheConsumerReceivesIntoGpuMemory() {
        String name = "ucxgpu" + System.nanoTime();
        Viper viper = keep(Viper.builder()
                .notifier("mem://" + name)
                .transports("ucx-fakegpu://127.0.0.1:0", "tcp://127.0.0.1:0")
                .config("viper.consumer.device", "gpu")
                .config("viper.consumer.gpu.budget.bytes", "64m")
                .build());
        ViperProducer producer = keep(viper.producer("m", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(viper.consumer("m"));
        List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
        consumer.onUpdate(updates::add);
        int n = 100_000;
        DeviceBuffer w = keep(gpu.allocate(0, 4L * n));
        MemorySegment ws = FakeGpuProvider.at(w.devicePointer(), 4L * n);
        for (int i = 0; i < n; i++) {
            ws.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 4L * i, i * 0.25f);
        }
        Manifest m = producer.publish(
                        sink -> {
                            sink.addDevice("w", DType.F32, new long[] {n}, w.devicePointer(), 0);
                            sink.addFloats("b", new long[] {2}, new float[] {5, 6});
                        },
                        Map.of())
                .announced()
                .join();
        assertEquals(
                List.of("ucx-fakegpu", "tcp"),
                m.locations().stream().map(Location::scheme).toList());
        assertTrue(m.tensor("w").phash64().isPresent(), "a GPU location carries the on-device hash");
        assertEquals(1, consumer.awaitVersion(1, WAIT));
        assertEquals("ucx-fakegpu", updates.getFirst().path());
        try (ModelLease lease = consumer.current()) {
            DeviceBuffer got = lease.device().orElseThrow();
            float[] all =
                    FakeGpuProvider.at(got.devicePointer(), got.byteSize()).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
            assertEquals(n + 2, all.length);
            assertEquals(0.25f * (n - 1), all[n - 1]);
            assertEquals(6f, all[n + 1]);
        }
    }
}
