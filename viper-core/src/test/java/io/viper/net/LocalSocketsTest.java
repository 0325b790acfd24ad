package io.viper.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/** The kernel's socket tables: addresses, owners, and this process's own listeners. */
class LocalSocketsTest {
    @Test
    void theTablesNameAddressPortAndOwner() throws Exception {
        List<String> table = List.of(
                "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
                "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1"
                        + " 0000000000000000 100 0 0 10 0",
                "   1: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1"
                        + " 0000000000000000 100 0 0 10 0",
                "   2: 0100007F:1F91 0100007F:9999 01 00000000:00000000 00:00000000 00000000  1000        0 88 1"
                        + " 0000000000000000 100 0 0 10 0");
        List<LocalSockets.Listener> l = LocalSockets.parse(table);
        assertEquals(2, l.size(), "only listening sockets");
        assertEquals(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 8080),
                l.getFirst().address());
        assertEquals(1000, l.getFirst().uid());
        assertEquals(OptionalInt.of(1000), LocalSockets.ownerOf(l, InetAddress.getLoopbackAddress(), 8080));
        assertEquals(
                OptionalInt.of(0),
                LocalSockets.ownerOf(l, InetAddress.getLoopbackAddress(), 80),
                "a wildcard listener serves loopback too");
        assertEquals(OptionalInt.empty(), LocalSockets.ownerOf(l, InetAddress.getLoopbackAddress(), 8081));
        assertEquals(
                new InetSocketAddress(InetAddress.ofLiteral("::1"), 443),
                LocalSockets.address("00000000000000000000000001000000:01BB"));
    }

    @Test
    void aListenerOfThisProcessIsFoundWithItsOwner() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            assertTrue(LocalSockets.ofThisProcess()
                    .contains(new InetSocketAddress(InetAddress.getLoopbackAddress(), s.getLocalPort())));
            assertEquals(
                    OptionalInt.of(LocalSockets.ownUid()),
                    LocalSockets.ownerOf(InetAddress.getLoopbackAddress(), s.getLocalPort()));
        }
    }
}
