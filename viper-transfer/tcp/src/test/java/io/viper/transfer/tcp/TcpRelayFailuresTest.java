package io.viper.transfer.tcp;

import static io.viper.testing.SdkFixture.assertServes;
import static io.viper.testing.SdkFixture.snapshot;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.CheckpointPolicy;
import io.viper.ModelUpdate;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperConsumer;
import io.viper.ViperProducer;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportServer;
import io.viper.testing.SdkFixture;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Relays that fail their readers, on loopback: a relay that serves bytes which do not match the producer's manifest is
 * caught at its first block, dropped as a source and named in a metric, and the reader reads the version from the
 * producer; a relay that goes away mid-transfer costs its reader only the blocks it had not delivered, which come from
 * the producer. Each fake relay is a real tcp:// server, registered with the producer's tracker as a consumer would.
 */
class TcpRelayFailuresTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final long MIB = 1L << 20;
    private static final long[] SIZES = {3 * MIB + 5, 2 * MIB};
    private static final long TOTAL = 5 * MIB + 5;

    private SdkFixture fx;
    private String notifier;
    private ViperProducer producer;
    private final TcpTransportProvider tcp = new TcpTransportProvider();

    @BeforeEach
    void setUp() {
        fx = new SdkFixture("tcp-relay-fail-" + System.nanoTime());
        notifier = "mem://tcp-relay-fail-" + System.nanoTime();
        Viper p = fx.keep(Viper.builder()
                .notifier(notifier)
                .transports("tcp://127.0.0.1:0")
                .meterRegistry(new SimpleMeterRegistry())
                .config("viper.producer.block.skip.unshared", "false")
                .build());
        producer = fx.keep(p.producer("m", CheckpointPolicy.never()));
    }

    @AfterEach
    void tearDown() throws Exception {
        fx.close();
    }

    /** Publishes {@code tensors} as v1 and returns its manifest, as a consumer that loads nothing heard it. */
    private Manifest publish(List<MemorySegment> tensors) throws Exception {
        Viper scout = fx.keep(Viper.builder()
                .notifier(notifier)
                .consumerPaths("tcp")
                .config("viper.consumer.autoload", "false")
                .build());
        CompletableFuture<Manifest> heard = new CompletableFuture<>();
        fx.keep(scout.consumer("m")).onManifest(heard::complete);
        producer.publish(snapshot(tensors), Map.of());
        return heard.get(30, TimeUnit.SECONDS);
    }

    /** A fake relay serving {@code staged}, which the producer's tracker learns of as a reader of v1 would tell it. */
    private TransportServer relay(Manifest m, StagedCheckpoint staged) {
        TransportServer s = fx.keep(tcp.openServer(URI.create("tcp://127.0.0.1:0"), ViperConfig.defaults()));
        s.expose(staged);
        TransportClient c = fx.keep(tcp.openClient(ViperConfig.defaults()));
        Location at = m.locations().stream()
                .filter(l -> l.scheme().equals("tcp"))
                .findFirst()
                .orElseThrow();
        assertEquals(
                List.of(),
                c.askSources(m, at, List.of(s.location().uri()), List.of()).orElseThrow());
        return s;
    }

    private ViperConsumer join(SimpleMeterRegistry registry, List<ModelUpdate> updates) {
        Viper v = fx.keep(Viper.builder()
                .notifier(notifier)
                .consumerPaths("tcp")
                .meterRegistry(registry)
                .config("viper.consumer.relay.transports", "tcp://127.0.0.1:0")
                .config("viper.consumer.retry.backoff.ms", "20")
                .build());
        ViperConsumer c = fx.keep(v.consumer("m"));
        c.onUpdate(updates::add);
        return c;
    }

    private MemorySegment dataOf(Manifest m, List<MemorySegment> tensors) {
        MemorySegment data = fx.arena().allocate(m.totalBytes());
        for (int i = 0; i < tensors.size(); i++) {
            long off = m.tensors().get(i).info().offset();
            MemorySegment.copy(tensors.get(i), 0, data, off, tensors.get(i).byteSize());
        }
        return data;
    }

    @Test
    void aLyingRelayIsCaughtDroppedAndTheVersionComesFromTheProducer() throws Exception {
        List<MemorySegment> v1 = fx.model(5, SIZES);
        Manifest m = publish(v1);
        MemorySegment forged = dataOf(m, v1);
        forged.set(ValueLayout.JAVA_BYTE, 7, (byte) ~forged.get(ValueLayout.JAVA_BYTE, 7));
        relay(m, new FakeRelay(m, forged, Long.MAX_VALUE));

        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
        ViperConsumer c = join(registry, updates);
        c.awaitVersion(1, WAIT);
        assertServes(c, 1, v1);
        ModelUpdate u = updates.getFirst();
        assertEquals(0, u.bytesFromRelays(), "nothing of the lying relay was used: " + u);
        assertEquals(TOTAL, u.bytesFromProducer());
        Counter dropped = registry.find("viper.fleet.relays.dropped").counter();
        assertTrue(dropped != null && dropped.count() >= 1, "the lying relay was dropped as a source");
    }

    @Test
    void aRelayThatGoesAwayMidTransferCostsOnlyTheBlocksItDidNotDeliver() throws Exception {
        List<MemorySegment> v1 = fx.model(6, SIZES);
        Manifest m = publish(v1);
        FakeRelay vanishing = new FakeRelay(m, dataOf(m, v1), 2 * MIB);
        relay(m, vanishing);

        List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
        ViperConsumer c = join(new SimpleMeterRegistry(), updates);
        // The relay's server streamed the first 2 MiB and waits for more: now the relay goes away.
        Runnable waiting = vanishing.waiting.get(30, TimeUnit.SECONDS);
        vanishing.gone = true;
        waiting.run();
        c.awaitVersion(1, WAIT);
        assertServes(c, 1, v1);
        ModelUpdate u = updates.getFirst();
        assertEquals(2 * MIB, u.bytesFromRelays(), "the two blocks the relay delivered were kept: " + u);
        assertEquals(TOTAL - 2 * MIB, u.bytesFromProducer(), "the rest came from the producer");
    }

    /** A relay's version: {@code data} readable up to {@code readableUpTo}; then it waits until it is {@link #gone}. */
    private static final class FakeRelay implements StagedCheckpoint {
        private final Manifest manifest;
        private final MemorySegment data;
        private final long readableUpTo;
        final CompletableFuture<Runnable> waiting = new CompletableFuture<>();
        volatile boolean gone;

        FakeRelay(Manifest manifest, MemorySegment data, long readableUpTo) {
            this.manifest = manifest;
            this.data = data;
            this.readableUpTo = readableUpTo;
        }

        @Override
        public String model() {
            return manifest.model();
        }

        @Override
        public long version() {
            return manifest.version();
        }

        @Override
        public Manifest manifest() {
            return manifest;
        }

        @Override
        public MemorySegment data() {
            return data;
        }

        @Override
        public ReadLease tryLease() {
            return () -> {};
        }

        @Override
        public long readable(long offset, long length) {
            if (gone) {
                return -1;
            }
            return Math.max(0, Math.min(length, readableUpTo - offset));
        }

        @Override
        public void onReadable(Runnable callback) {
            waiting.complete(callback);
        }
    }
}
