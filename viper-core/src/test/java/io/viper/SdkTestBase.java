package io.viper;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.testing.InMemoryTransportProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/** What the SDK tests over the in-memory test doubles share: a name per test, instances closed after it, models. */
abstract class SdkTestBase {
    static final Duration WAIT = Duration.ofSeconds(20);
    private final List<AutoCloseable> closeables = new ArrayList<>();
    String name;
    SimpleMeterRegistry registry;

    @BeforeEach
    void setUp(TestInfo info) {
        InMemoryTransportProvider.resetFaults();
        name = info.getTestMethod().orElseThrow().getName() + System.nanoTime();
        registry = new SimpleMeterRegistry();
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    <T extends AutoCloseable> T keep(T c) {
        closeables.add(c);
        return c;
    }

    Viper viper(String... transports) {
        Viper.Builder b = Viper.builder().notifier("mem://" + name).meterRegistry(registry);
        b.transports(transports.length == 0 ? new String[] {"mem://" + name + "-a"} : transports);
        return keep(b.build());
    }

    static Map<String, float[]> params(float base) {
        Map<String, float[]> p = new LinkedHashMap<>();
        float[] w = new float[6];
        for (int i = 0; i < w.length; i++) {
            w[i] = base + i;
        }
        p.put("dense.weight", w);
        p.put("dense.bias", new float[] {base, -base});
        return p;
    }

    static Snapshot snapshot(float base) {
        return Snapshot.ofFloats(params(base), Map.of("dense.weight", new long[] {2, 3}, "dense.bias", new long[] {2}));
    }
}
