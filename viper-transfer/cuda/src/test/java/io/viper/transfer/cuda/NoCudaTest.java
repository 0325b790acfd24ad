package io.viper.transfer.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.viper.CheckpointPolicy;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperProducer;
import io.viper.errors.ViperException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.Tier;
import io.viper.spi.GpuProvider;
import io.viper.spi.Providers;
import io.viper.spi.TransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Where there is no CUDA driver (this build machine): every GPU entry point reports a clear "no CUDA driver/device:
 * ..." and nothing throws a linkage error. Skipped on a machine with a GPU.
 */
class NoCudaTest {
    private static String reason;

    @BeforeAll
    static void probe() {
        Optional<String> why = new JCudaGpuProvider().unavailableReason();
        assumeTrue(why.isPresent(), "a CUDA driver is present: these checks are for machines without one");
        reason = why.get();
    }

    @Test
    void reasonIsOneClearLine() {
        assertTrue(reason.startsWith("no CUDA driver/device: "), reason);
        assertFalse(reason.contains("\n"), reason);
        assertTrue(reason.length() < 200, reason);
        // Asking again gives the same answer and still throws nothing.
        assertEquals(reason, new JCudaGpuProvider().unavailableReason().orElseThrow());
    }

    @Test
    void transportsAreFoundAndSayWhyTheyCannotRun() {
        TransportProvider ipc = Providers.transport("cuda-ipc").orElseThrow();
        TransportProvider pipe = Providers.transport("cuda-pipe").orElseThrow();
        assertEquals(Tier.GPU, ipc.tier());
        assertEquals(Tier.GPU, pipe.tier());
        assertTrue(ipc.priority() < pipe.priority(), "cuda-ipc is preferred on one node");
        assertEquals(Optional.of(reason), ipc.unavailableReason());
        assertEquals(Optional.of(reason), pipe.unavailableReason());
        unavailable(() -> ipc.openServer(URI.create("cuda-ipc://127.0.0.1:0"), ViperConfig.defaults()));
        unavailable(() -> pipe.openClient(ViperConfig.defaults()));
        TransportProvider ucxCuda = Providers.transport("ucx-cuda").orElseThrow();
        assertEquals(Tier.GPU, ucxCuda.tier());
        assertTrue(
                ipc.priority() < ucxCuda.priority() && ucxCuda.priority() < pipe.priority(),
                "ucx-cuda sits between cuda-ipc and cuda-pipe");
        assertEquals(Optional.of(reason), ucxCuda.unavailableReason(), "CUDA is the first thing ucx-cuda needs");
        unavailable(() -> ucxCuda.openServer(URI.create("ucx-cuda://127.0.0.1:0"), ViperConfig.defaults()));
        unavailable(() -> ucxCuda.openClient(ViperConfig.defaults()));
    }

    @Test
    void gpuProviderEntryPointsThrowUnavailable() {
        GpuProvider g = ServiceLoader.load(GpuProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(p -> p instanceof JCudaGpuProvider)
                .findFirst()
                .orElseThrow(() -> new AssertionError("JCudaGpuProvider is not registered"));
        assertEquals("jcuda", g.name());
        assertTrue(Providers.gpu().orElseThrow().unavailableReason().isPresent(), "no provider is available here");
        assertEquals(Optional.of(reason), g.unavailableReason());
        MemorySegment host = MemorySegment.ofArray(new byte[8]);
        for (Executable call : List.<Executable>of(
                g::deviceCount,
                () -> g.freeBytes(0),
                () -> g.allocate(0, 1024),
                () -> g.copyToDevice(0, host, 1),
                () -> g.copyToHost(0, 1, host),
                () -> g.copyDeviceToDevice(0, 1, 2, 8),
                () -> g.hash64(0, 1, 8),
                () -> g.pinHost(0, Arena.global().allocate(8)))) {
            unavailable(call);
        }
    }

    @Test
    void theDefaultTransportsListTheGpuOnesAndSkipThemQuietlyHere() {
        for (String gpuScheme : List.of("cuda-ipc://", "ucx-cuda://", "cuda-pipe://")) {
            assertTrue(
                    ViperConfig.TRANSPORTS.defaultValue().contains(gpuScheme), ViperConfig.TRANSPORTS.defaultValue());
        }
        try (Viper viper = Viper.builder()
                        .notifier("mem://no-cuda-" + System.nanoTime())
                        .build();
                ViperProducer producer = viper.producer("m", CheckpointPolicy.never())) {
            Manifest m = producer.publish(
                            sink -> sink.addFloats("w", new long[] {4}, new float[] {1, 2, 3, 4}), Map.of())
                    .announced()
                    .join();
            List<String> schemes = m.locations().stream().map(Location::scheme).toList();
            assertTrue(schemes.contains("tcp"), schemes.toString());
            assertFalse(
                    schemes.stream().anyMatch(s -> s.contains("cuda")), "no GPU locations without CUDA: " + schemes);
        }
    }

    private static void unavailable(Executable call) {
        ViperException e = assertThrows(ViperException.class, call);
        assertEquals(ViperException.Reason.UNSUPPORTED, e.reason());
        assertEquals(reason, e.getMessage());
    }
}
