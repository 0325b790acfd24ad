package io.viper;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Tied weights (one tensor under two names) over the in-memory test doubles: stored once, announced as an alias in the
 * metadata, and read under either name from the same memory; bad aliases are refused before anything is staged.
 */
class TiedWeightsSdkTest extends SdkTestBase {
    private static final long[] EMBEDDING = {4, 3};

    @Test
    void theSameSegmentUnderTwoNamesIsStoredOnceAndReadUnderBoth() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment tok = arena.allocate(48);
            for (int i = 0; i < 12; i++) {
                tok.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, i + 0.5f);
            }
            MemorySegment bias = arena.allocate(16);
            Snapshot tied = sink -> {
                sink.add("tok.weight", DType.F32, EMBEDDING, tok);
                sink.add("head.bias", DType.F32, new long[] {4}, bias);
                sink.add("head.weight", DType.F32, EMBEDDING, tok); // head.weight = tok.weight
                sink.add("tok.view", DType.F32, new long[] {12}, tok); // another shape: a tensor of its own
            };
            assertServedOnce(viper(), "tied", tied);
        }
    }

    @Test
    void theSameFloatArrayUnderTwoNamesAndAnExplicitAliasAreAliases() throws Exception {
        float[] tok = new float[12];
        for (int i = 0; i < tok.length; i++) {
            tok[i] = i + 0.5f;
        }
        Viper v = viper();
        assertServedOnce(v, "same-array", sink -> {
            sink.addFloats("tok.weight", EMBEDDING, tok);
            sink.addFloats("head.bias", new long[] {4}, new float[4]);
            sink.addFloats("head.weight", EMBEDDING, tok);
            sink.addFloats("tok.view", new long[] {12}, tok);
        });
        assertServedOnce(v, "explicit", sink -> {
            sink.addFloats("tok.weight", EMBEDDING, tok);
            sink.addFloats("head.bias", new long[] {4}, new float[4]);
            sink.alias("head.weight", "tok.weight");
            sink.addFloats("tok.view", new long[] {12}, tok.clone());
        });
    }

    private static void assertServedOnce(Viper v, String model, Snapshot snapshot) throws Exception {
        try (ViperProducer producer = v.producer(model, CheckpointPolicy.never());
                ViperConsumer consumer = v.consumer(model)) {
            long version = producer.publish(snapshot, Map.of("run", "a"))
                    .announced()
                    .get()
                    .version();
            consumer.awaitVersion(version, WAIT);
            try (ModelLease lease = consumer.current()) {
                Manifest m = lease.manifest();
                assertEquals(
                        List.of("tok.weight", "head.bias", "tok.view"),
                        m.tensors().stream().map(TensorEntry::name).toList(),
                        "head.weight is not stored again");
                assertEquals(48 + 16 + 48, m.totalBytes());
                assertEquals("tok.weight", m.metadata().get("head.weight"), "the alias, as safetensors writes it");
                assertEquals(
                        Map.of("head.weight", "tok.weight"), lease.checkpoint().aliases());
                Tensor tok = lease.tensor("tok.weight");
                Tensor head = lease.tensor("head.weight");
                assertEquals("head.weight", head.name());
                assertArrayEquals(EMBEDDING, head.shape());
                assertEquals(tok.data().address(), head.data().address(), "the same memory");
                assertEquals(tok.data().byteSize(), head.data().byteSize());
                assertEquals(11.5f, head.toFloatArray()[11]);
                assertThrows(ViperNotFoundException.class, () -> lease.tensor("run"), "metadata is no alias");
            }
        }
    }

    @Test
    void badAliasesAreRefusedNamingTheProblemAndNothingIsPublished() {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("bad", CheckpointPolicy.never()));
        float[] w = new float[4];
        assertRefused(
                producer,
                sink -> sink.alias("head.weight", "tok.weight"),
                Map.of(),
                "alias 'head.weight': " + "its target 'tok.weight' is not a tensor added before it");
        assertRefused(
                producer,
                sink -> {
                    sink.addFloats("tok.weight", new long[] {4}, w);
                    sink.alias("head.weight", "tok.weight");
                    sink.alias("out.weight", "head.weight");
                },
                Map.of(),
                "alias 'out.weight': its target 'head.weight' is itself an alias of 'tok.weight': name the tensor "
                        + "(no chains)");
        assertRefused(
                producer,
                sink -> {
                    sink.addFloats("tok.weight", new long[] {4}, w);
                    sink.alias("tok.weight", "tok.weight");
                },
                Map.of(),
                "duplicate tensor name 'tok.weight' in snapshot");
        assertRefused(
                producer,
                sink -> {
                    sink.addFloats("tok.weight", new long[] {4}, w);
                    sink.addFloats("head.weight", new long[] {4}, w);
                },
                Map.of("head.weight", "mine"),
                "alias 'head.weight' of tensor 'tok.weight': the metadata has an entry of that name, which would "
                        + "shadow it");
        assertEquals(0, producer.latestVersion(), "no version was used");
    }

    private static void assertRefused(
            ViperProducer producer, Snapshot snapshot, Map<String, String> metadata, String message) {
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> producer.publish(snapshot, metadata));
        assertEquals(message, e.getMessage());
    }
}
