package io.viper.transfer.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.testing.TestStagedCheckpoint;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Bad URIs, configuration values and arguments, and a producer that never answers. */
class UcxValidationTest {
    private final UcxTransportProvider provider = new UcxTransportProvider();

    @Test
    void describesItself() {
        assertEquals("ucx", provider.scheme());
        assertEquals(Tier.HOST, provider.tier());
        assertEquals(0, provider.priority());
        assertTrue(
                ServiceLoader.load(TransportProvider.class).stream()
                        .anyMatch(p -> p.type() == UcxTransportProvider.class),
                "registered in META-INF/services");
        provider.unavailableReason()
                .ifPresent(r -> assertTrue(!r.contains("\n") && r.startsWith("UCX"), "one line: " + r));
    }

    @Test
    void rejectsBadBindUris() {
        for (String bad : List.of(
                "tcp://127.0.0.1:0",
                "ucx://127.0.0.1",
                "ucx://127.0.0.1:70000",
                "ucx://127.0.0.1:0/path",
                "ucx://user@127.0.0.1:0",
                "ucx:opaque",
                "ucx://127.0.0.1:0?x=1")) {
            ViperConfigException e = assertThrows(
                    ViperConfigException.class,
                    () -> provider.openServer(URI.create(bad), ViperConfig.defaults()),
                    bad);
            assertTrue(e.getMessage().contains(bad), e.getMessage());
            assertTrue(!e.getMessage().contains("\n"), e.getMessage());
        }
    }

    @Test
    void rejectsBadConfigNamingTheKeyWhenTheConfigurationIsBuilt() {
        for (var bad : List.of(
                Map.of("viper.transfer.timeout.ms", "soon"),
                Map.of("viper.transfer.timeout.ms", "0"),
                Map.of("viper.ucx.chunk.bytes", "12"),
                Map.of("viper.ucx.inflight", "-1"),
                Map.of("viper.ucx.copy", "yes"),
                Map.of("viper.ucx.rkey.cache", "1000"))) {
            String key = bad.keySet().iterator().next();
            ViperConfigException e = assertThrows(ViperConfigException.class, () -> ViperConfig.of(bad));
            assertTrue(e.getMessage().contains(key), e.getMessage());
        }
        ViperConfigException typo =
                assertThrows(ViperConfigException.class, () -> ViperConfig.of(Map.of("viper.ucx.inflght", "8")));
        assertEquals(
                "unknown configuration key viper.ucx.inflght (did you mean viper.ucx.inflight?)", typo.getMessage());
    }

    @Test
    void declaresItsKeysOnceForBothUcxTransports() {
        assertEquals(UcxConfig.KEYS, provider.configKeys());
        assertEquals(UcxConfig.KEYS, new UcxCudaTransportProvider().configKeys());
        assertTrue(ViperConfig.keys().containsAll(UcxConfig.KEYS), "installed providers' keys are declared");
        ViperConfig c = ViperConfig.of(Map.of("viper.ucx.inflight", "8", "viper.ucx.chunk.bytes", "1m"));
        assertEquals(8, c.get(UcxConfig.IN_FLIGHT));
        assertEquals(1L << 20, c.get(UcxConfig.CHUNK_BYTES));
        assertEquals(true, c.get(UcxConfig.COPY));
    }

    @Test
    void rejectsBadReadArguments() {
        assumeUcx();
        try (TransportClient client = provider.openClient(ViperConfig.defaults());
                TestStagedCheckpoint s = new TestStagedCheckpoint("m", 1, 1, 100);
                Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(100);
            Location ok = new Location(URI.create("ucx://127.0.0.1:9"), Tier.HOST);
            List<ByteRange> whole = List.of(new ByteRange(0, 100, 0));
            assertThrows(
                    ViperConfigException.class,
                    () -> client.read(
                            s.manifest(), new Location(URI.create("tcp://127.0.0.1:9"), Tier.HOST), whole, dst));
            assertThrows(
                    ViperConfigException.class,
                    () -> client.read(
                            s.manifest(), new Location(URI.create("ucx://127.0.0.1"), Tier.HOST), whole, dst));
            assertThrows(
                    ViperConfigException.class,
                    () -> client.read(s.manifest(), ok, whole, MemorySegment.ofArray(new byte[100])));
            assertThrows(ViperConfigException.class, () -> client.read(s.manifest(), ok, whole, dst.asReadOnly()));
            assertThrows(
                    ViperConfigException.class,
                    () -> client.read(s.manifest(), ok, List.of(new ByteRange(50, 51, 0)), dst));
            assertThrows(
                    ViperConfigException.class,
                    () -> client.read(s.manifest(), ok, List.of(new ByteRange(0, 60, 50)), dst));
        }
    }

    @Test
    void unreachableProducerFailsRetriably() throws Exception {
        assumeUcx();
        int port;
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = ss.getLocalPort();
        }
        try (TransportClient client = provider.openClient(ViperConfig.defaults());
                TestStagedCheckpoint s = new TestStagedCheckpoint("m", 1, 1, 100);
                Arena arena = Arena.ofConfined()) {
            RetriableViperException e = assertThrows(
                    RetriableViperException.class,
                    () -> client.read(
                            s.manifest(),
                            new Location(URI.create("ucx://127.0.0.1:" + port), Tier.HOST),
                            List.of(new ByteRange(0, 100, 0)),
                            arena.allocate(100)));
            assertEquals(ViperException.Reason.UNAVAILABLE, e.reason());
        }
    }

    @Test
    void silentProducerTimesOut() throws Exception {
        assumeUcx();
        try (ServerSocket silent = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                TransportClient client =
                        provider.openClient(ViperConfig.of(Map.of("viper.transfer.timeout.ms", "300")));
                TestStagedCheckpoint s = new TestStagedCheckpoint("m", 1, 1, 100);
                Arena arena = Arena.ofConfined()) {
            Thread.ofVirtual().start(() -> {
                try (Socket c = silent.accept();
                        InputStream in = c.getInputStream()) {
                    in.transferTo(OutputStream.nullOutputStream());
                } catch (Exception ignored) {
                    // test over
                }
            });
            long t0 = System.nanoTime();
            RetriableViperException e = assertThrows(
                    RetriableViperException.class,
                    () -> client.read(
                            s.manifest(),
                            new Location(URI.create("ucx://127.0.0.1:" + silent.getLocalPort()), Tier.HOST),
                            List.of(new ByteRange(0, 100, 0)),
                            arena.allocate(100)));
            assertEquals(ViperException.Reason.TIMEOUT, e.reason());
            assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "bounded by the configured timeout");
        }
    }

    private void assumeUcx() {
        Assumptions.assumeTrue(
                provider.unavailableReason().isEmpty(),
                () -> "ucx unavailable: " + provider.unavailableReason().orElse(""));
    }
}
