package io.viper.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperException;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The mapping's lifetime: views are mapped and read-only, and dead after close. */
class SafetensorsFileLifecycleTest {
    @TempDir
    Path dir;

    private Path sample() {
        Path p = dir.resolve("s.safetensors");
        try (Arena arena = Arena.ofConfined()) {
            SafetensorsWriter.write(
                    p,
                    List.of(Tensor.ofFloats("w", new long[] {2, 2}, new float[] {1, 2, 3, 4}, arena)),
                    Map.of("k", "v"));
        }
        return p;
    }

    @Test
    void tensorsAreReadOnlyViewsOfTheMapping() {
        try (SafetensorsFile f = SafetensorsFile.open(sample())) {
            Tensor w = f.tensor("w");
            assertTrue(w.data().isMapped(), "a view of the mapping, not a heap copy");
            assertTrue(w.data().isReadOnly());
            assertThrows(IllegalArgumentException.class, () -> w.data().set(ValueLayout.JAVA_BYTE, 0, (byte) 1));
            assertEquals(4.0, w.getDouble(3));
        }
    }

    @Test
    void accessAfterCloseThrowsIllegalState() {
        SafetensorsFile f = SafetensorsFile.open(sample());
        Tensor w = f.tensor("w");
        Checkpoint cp = f.checkpoint("m", 1);
        assertTrue(f.isOpen());
        f.close();
        assertFalse(f.isOpen());
        assertThrows(IllegalStateException.class, () -> w.getDouble(0));
        assertThrows(IllegalStateException.class, () -> cp.tensor("w").toFloatArray());
        assertThrows(IllegalStateException.class, () -> TensorStats.of(w));
        ViperException closed = assertThrows(ViperException.class, () -> f.checkpoint("m", 2));
        assertEquals(ViperException.Reason.CLOSED, closed.reason());
        assertEquals(List.of(2L, 2L), Arrays.stream(w.shape()).boxed().toList(), "infos outlive the mapping");
        assertEquals(Map.of("k", "v"), f.metadata());
        f.close(); // idempotent
    }

    @Test
    void anotherThreadMayCloseTheSharedMapping() throws Exception {
        SafetensorsFile f = SafetensorsFile.open(sample());
        Tensor w = f.tensor("w");
        Thread t = Thread.ofPlatform().start(f::close);
        t.join();
        assertThrows(IllegalStateException.class, () -> w.getDouble(0));
    }
}
