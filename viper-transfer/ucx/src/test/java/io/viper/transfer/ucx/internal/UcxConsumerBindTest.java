package io.viper.transfer.ucx.internal;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.Tier;
import io.viper.net.LocalSockets;
import io.viper.spi.ByteRange;
import io.viper.testing.TestStagedCheckpoint;
import io.viper.transfer.ucx.UcxTransportProvider;
import java.lang.foreign.Arena;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.URI;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A consumer's UCX worker listens on loopback only unless told (issue 39, case 5): UCX's TCP transport opens a listener
 * on every network device its context uses, so the consumer's context is kept to the interface of
 * {@code viper.ucx.consumer.bind}. Read from the kernel's socket tables, since UCX opens them behind Java's back.
 */
class UcxConsumerBindTest {
    /** The listeners {@code config}'s consumer opened, beyond those this process had. */
    private static List<InetSocketAddress> listenersOfAConsumer(ViperConfig config) throws Exception {
        List<InetSocketAddress> before = LocalSockets.ofThisProcess();
        try (UcxClient client = UcxClient.open(config)) {
            List<InetSocketAddress> opened = new ArrayList<>(LocalSockets.ofThisProcess());
            opened.removeAll(before);
            return opened;
        }
    }

    @Test
    void aConsumerListensOnLoopbackOnlyByDefault() throws Exception {
        var reason = new UcxTransportProvider().unavailableReason();
        Assumptions.assumeTrue(reason.isEmpty(), () -> "ucx unavailable: " + reason.orElse(""));
        List<InetSocketAddress> opened = listenersOfAConsumer(ViperConfig.defaults());
        List<InetSocketAddress> outside =
                opened.stream().filter(a -> !a.getAddress().isLoopbackAddress()).toList();
        assertTrue(outside.isEmpty(), "listening beyond loopback: " + outside + " (all new listeners: " + opened + ")");
    }

    @Test
    void toldSoTheConsumerListensOnEveryInterface() throws Exception {
        var reason = new UcxTransportProvider().unavailableReason();
        Assumptions.assumeTrue(reason.isEmpty(), () -> "ucx unavailable: " + reason.orElse(""));
        Optional<InetAddress> external = Collections.list(NetworkInterface.getNetworkInterfaces()).stream()
                .filter(UcxConsumerBindTest::upAndNotLoopback)
                .flatMap(n -> n.inetAddresses())
                .filter(a -> a instanceof Inet4Address)
                .findFirst();
        Assumptions.assumeTrue(external.isPresent(), "this host has no network interface beside loopback");
        List<InetSocketAddress> opened =
                listenersOfAConsumer(ViperConfig.of(Map.of("viper.ucx.consumer.bind", "0.0.0.0")));
        assertTrue(
                opened.stream().anyMatch(a -> a.getAddress().equals(external.get())),
                "0.0.0.0 lets UCX listen on " + external.get() + " too: " + opened);
    }

    @Test
    void aProducerOnAnotherHostIsRefusedNamingTheKey() {
        var reason = new UcxTransportProvider().unavailableReason();
        Assumptions.assumeTrue(reason.isEmpty(), () -> "ucx unavailable: " + reason.orElse(""));
        try (UcxClient client = UcxClient.open(ViperConfig.defaults());
                TestStagedCheckpoint staged = new TestStagedCheckpoint("m", 1, 1, 1 << 20);
                Arena arena = Arena.ofConfined()) {
            // 192.0.2.77 (TEST-NET-1): an address of no interface here; refused before any connection.
            Manifest m = staged.manifest();
            ViperConfigException e = assertThrows(
                    ViperConfigException.class,
                    () -> client.read(
                            m,
                            new Location(URI.create("ucx://192.0.2.77:7000"), Tier.HOST),
                            List.of(new ByteRange(0, m.totalBytes(), 0)),
                            arena.allocate(m.totalBytes())));
            assertTrue(e.getMessage().contains("viper.ucx.consumer.bind"), e.getMessage());
        }
    }

    private static boolean upAndNotLoopback(NetworkInterface n) {
        try {
            return n.isUp() && !n.isLoopback();
        } catch (SocketException e) {
            return false;
        }
    }
}
