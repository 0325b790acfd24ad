package io.viper.notify.embedded;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.Notifier;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;

/**
 * What the embedded notifier's behaviour tests share: the provider, resources closed after each test, manifests, and
 * listeners that collect what a subscription receives.
 */
abstract class EmbeddedNotifierTestBase {
    static final String BROKER_LOGGER = "io.viper.notify.embedded.internal.Broker";
    static final ViperConfig FAST = ViperConfig.of(Map.of("viper.notify.timeout.ms", "10000"));

    final EmbeddedNotifierProvider provider = new EmbeddedNotifierProvider();
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    <T extends AutoCloseable> T own(T c) {
        closeables.add(c);
        return c;
    }

    static Manifest manifest(String model, long version, String location) {
        var meta = new LinkedHashMap<String, String>();
        meta.put("viper.iteration", Long.toString(version));
        return new Manifest(
                model,
                version,
                "behaviour",
                Manifest.nowMicros(),
                meta,
                List.of(new TensorEntry(
                        new TensorInfo("w", DType.F32, new long[] {4}, 0, 16), new ContentHash(version, 1))),
                List.of(new Location(URI.create(location), Tier.HOST)));
    }

    /** Collects manifests and problems of one subscription. */
    static class Collector implements Notifier.ManifestListener {
        final BlockingQueue<Manifest> manifests = new LinkedBlockingQueue<>();
        final BlockingQueue<String> problems = new LinkedBlockingQueue<>();

        @Override
        public void onManifest(Manifest manifest) {
            manifests.add(manifest);
        }

        @Override
        public void onProblem(String problem) {
            problems.add(problem);
        }

        Manifest next() throws InterruptedException {
            Manifest m = manifests.poll(10, TimeUnit.SECONDS);
            assertNotNull(m, "no manifest within 10 s");
            return m;
        }

        String problem() throws InterruptedException {
            String p = problems.poll(10, TimeUnit.SECONDS);
            assertNotNull(p, "no problem reported within 10 s");
            return p;
        }
    }

    /** Collects what one subscription receives: each manifest with the bytes that came with it (empty: none). */
    static final class DataCollector implements Notifier.ManifestListener {
        final BlockingQueue<Map.Entry<Manifest, byte[]>> received = new LinkedBlockingQueue<>();

        @Override
        public void onManifest(Manifest manifest) {
            received.add(Map.entry(manifest, new byte[0]));
        }

        @Override
        public void onManifest(Manifest manifest, MemorySegment data) {
            assertTrue(data.isReadOnly(), "the listener gets the bytes read-only");
            received.add(Map.entry(manifest, data.toArray(ValueLayout.JAVA_BYTE)));
        }

        Map.Entry<Manifest, byte[]> next() throws InterruptedException {
            Map.Entry<Manifest, byte[]> e = received.poll(10, TimeUnit.SECONDS);
            assertNotNull(e, "no manifest within 10 s");
            return e;
        }
    }
}
