package io.viper.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.micrometer.core.instrument.MeterRegistry;
import io.viper.ModelLease;
import io.viper.Snapshot;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * What SDK tests over the in-memory notifier and transport share: Viper instances named after the test (notifier
 * {@code mem://NAME}, transport {@code mem://NAME-t}), models of random U8 tensors {@code t0, t1, ...}, and closing
 * everything in reverse order. One per test; not thread-safe.
 */
public final class SdkFixture implements AutoCloseable {
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final Arena arena = Arena.ofShared();
    private final String name;

    public SdkFixture(String name) {
        InMemoryTransportProvider.resetFaults();
        this.name = name;
    }

    /** The name of this test's transport server, for {@link InMemoryTransportProvider#faults}. */
    public String transport() {
        return name + "-t";
    }

    public Arena arena() {
        return arena;
    }

    /** Closes {@code c} with the fixture. */
    public <T extends AutoCloseable> T keep(T c) {
        closeables.add(c);
        return c;
    }

    /** A Viper instance on this test's notifier and transport, with {@code config} as key, value pairs. */
    public Viper viper(MeterRegistry registry, String... config) {
        Viper.Builder b = Viper.builder()
                .notifier("mem://" + name)
                .transports("mem://" + transport())
                .meterRegistry(registry)
                .config("viper.consumer.retry.backoff.ms", "20");
        for (int i = 0; i < config.length; i += 2) {
            b.config(config[i], config[i + 1]);
        }
        return keep(b.build());
    }

    /** Tensors of the given sizes, of random bytes drawn from {@code seed}. */
    public List<MemorySegment> model(long seed, long... sizes) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<MemorySegment> out = new ArrayList<>();
        for (long size : sizes) {
            MemorySegment s = arena.allocate(size);
            long i = 0;
            for (; i + 8 <= size; i += 8) {
                s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
            }
            for (; i < size; i++) {
                s.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            out.add(s);
        }
        return out;
    }

    /** The tensors as U8 tensors {@code t0, t1, ...}. */
    public static Snapshot snapshot(List<MemorySegment> tensors) {
        return sink -> {
            for (int i = 0; i < tensors.size(); i++) {
                sink.add("t" + i, DType.U8, new long[] {tensors.get(i).byteSize()}, tensors.get(i));
            }
        };
    }

    /** Asserts that {@code consumer} serves {@code version} with exactly the bytes of {@code expected}. */
    public static void assertServes(ViperConsumer consumer, long version, List<MemorySegment> expected) {
        try (ModelLease m = consumer.current()) {
            assertEquals(version, m.version());
            for (int i = 0; i < expected.size(); i++) {
                Tensor t = m.tensor("t" + i);
                assertEquals(
                        -1,
                        expected.get(i).mismatch(t.data()),
                        "tensor t" + i + " of v" + version + " is byte for byte the published one");
            }
        }
    }

    @Override
    public void close() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
        arena.close();
    }
}
