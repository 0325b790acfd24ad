package io.viper.transfer.ucx.internal;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.net.LocalSockets;
import io.viper.transfer.ucx.UcxTransportProvider;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * {@code ucx://127.0.0.1:0} listens on loopback only: its control socket and UCX's own listeners, which UCX's TCP
 * transport opens on every interface unless told otherwise (read from the kernel's socket tables, since UCX opens them
 * behind Java's back).
 */
class UcxLoopbackBindTest {
    @Test
    void aServerBoundToLoopbackListensOnNoOtherInterface() throws Exception {
        var reason = new UcxTransportProvider().unavailableReason();
        Assumptions.assumeTrue(reason.isEmpty(), () -> "ucx unavailable: " + reason.orElse(""));
        List<InetSocketAddress> before = LocalSockets.ofThisProcess();
        try (UcxServer server = UcxServer.open(URI.create("ucx://127.0.0.1:0"), ViperConfig.defaults())) {
            List<InetSocketAddress> opened = new ArrayList<>(LocalSockets.ofThisProcess());
            opened.removeAll(before);
            assertTrue(
                    opened.stream()
                            .anyMatch(
                                    a -> a.getPort() == server.location().uri().getPort()),
                    "the control socket: " + opened);
            List<InetSocketAddress> outside = opened.stream()
                    .filter(a -> !a.getAddress().isLoopbackAddress())
                    .toList();
            assertTrue(
                    outside.isEmpty(),
                    "listening beyond loopback: " + outside + " (all new listeners: " + opened + ")");
        }
    }
}
