package io.viper;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.tensor.DType;
import io.viper.testing.InMemoryTransportProvider;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** viper-core alone has no GPU provider: GPU entry points fail with a clear reason and everything else works. */
class GpuWithoutDriverSdkTest {
    private static Viper viper(String name, String device) {
        InMemoryTransportProvider.resetFaults();
        return Viper.builder()
                .notifier("mem://" + name)
                .transports("mem://" + name + "-a")
                .config("viper.consumer.device", device)
                .build();
    }

    @Test
    void deviceTensorsAreRefusedWithTheReasonAndNothingIsPublished() {
        try (Viper v = viper("gpuless" + System.nanoTime(), "host");
                ViperProducer p = v.producer("g", CheckpointPolicy.never())) {
            ViperException e = assertThrows(
                    ViperException.class,
                    () -> p.publish(
                            sink -> sink.addDevice("w", DType.F32, new long[] {4}, 0x7f0000000000L, 0), Map.of()));
            assertEquals(ViperException.Reason.UNSUPPORTED, e.reason());
            assertTrue(e.getMessage().startsWith("no CUDA driver/device: "), e.getMessage());
            assertEquals(0, p.latestVersion());
        }
    }

    @Test
    void defaultSinkRefusesDeviceTensors() {
        Snapshot.TensorSink sink = new Snapshot.TensorSink() {
            @Override
            public void add(String name, DType dtype, long[] shape, MemorySegment data) {}

            @Override
            public void addFloats(String name, long[] shape, float[] values) {}
        };
        ViperException e =
                assertThrows(ViperException.class, () -> sink.addDevice("w", DType.F32, new long[] {1}, 1, 0));
        assertEquals(ViperException.Reason.UNSUPPORTED, e.reason());
        assertTrue(e.getMessage().startsWith("no CUDA driver/device: "), e.getMessage());
    }

    @Test
    void gpuConsumerWithoutGpuServesFromHost() {
        String name = "gpuconsumer" + System.nanoTime();
        try (Viper v = viper(name, "gpu");
                ViperProducer p = v.producer("g", CheckpointPolicy.never());
                ViperConsumer c = v.consumer("g")) {
            p.publish(Snapshot.ofFloats(Map.of("w", new float[] {1, 2, 3}), Map.of()), Map.of());
            assertEquals(1, c.awaitVersion(1, Duration.ofSeconds(20)));
            try (ModelLease m = c.current()) {
                assertEquals(Optional.empty(), m.device());
                assertArrayEquals(new float[] {1, 2, 3}, m.tensor("w").toFloatArray());
            }
        }
    }

    @Test
    void deviceKeyIsValidated() {
        assertEquals(
                2,
                ViperConfig.cudaDevice(
                        ViperConfig.of(Map.of("viper.consumer.device", "GPU:2")).get(ViperConfig.CONSUMER_DEVICE)));
        assertEquals(-1, ViperConfig.cudaDevice(ViperConfig.of(Map.of()).get(ViperConfig.CONSUMER_DEVICE)));
        ViperConfigException e =
                assertThrows(ViperConfigException.class, () -> ViperConfig.of(Map.of("viper.consumer.device", "tpu")));
        assertTrue(e.getMessage().contains("viper.consumer.device"), e.getMessage());
        assertThrows(
                ViperConfigException.class, () -> ViperConfig.of(Map.of("viper.consumer.gpu.budget.bytes", "lots")));
    }
}
