package io.viper.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.testing.Ports;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 39's case 4: connections from many loopback addresses, each under the per-peer limit, that never finish the
 * handshake. The broker closes those beyond its totals ({@code viper.limits.connections.total},
 * {@code .unauthenticated}) and keeps serving peers with the key: a consumer gets the model and a producer publishes.
 */
class FloodIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final int ADDRESSES = 40;
    private static final int PER_ADDRESS = 8;

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void case4AFloodFromManyAddressesLeavesTheBrokerServing() throws Exception {
        int port = Ports.free();
        String notifier = "embedded://127.0.0.1:" + port;
        Path a = Fleet.model(tmp.resolve("a.safetensors"), 1L << 20, 51);
        Path b = Fleet.model(tmp.resolve("b.safetensors"), 1L << 20, 52);
        List<Socket> flood = new ArrayList<>();
        try (Fleet fleet = new Fleet(tmp)) {
            Fleet.Member producer = fleet.start(
                    "publish-a",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    a.toString(),
                    "--notifier",
                    notifier,
                    "--transports",
                    "tcp://127.0.0.1:0",
                    "--linger",
                    "200s",
                    "--set",
                    "viper.limits.connections.per.peer=" + PER_ADDRESS,
                    "--set",
                    "viper.limits.connections.total=200",
                    "--set",
                    "viper.limits.connections.unauthenticated=32",
                    "--set",
                    "viper.limits.handshake.ms=60000");
            long v = producer.version(WAIT);
            try {
                for (int i = 0; i < ADDRESSES; i++) {
                    InetAddress from = InetAddress.getByAddress(new byte[] {127, 0, 1, (byte) (i + 1)});
                    for (int j = 0; j < PER_ADDRESS; j++) {
                        Socket s = new Socket();
                        s.bind(new InetSocketAddress(from, 0));
                        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 5_000);
                        s.setSoTimeout(200);
                        flood.add(s);
                    }
                }
                // Peers with the key get through while the flood holds its connections open.
                fleet.consumesExactly(a, v, "--notifier", notifier);
                Fleet.Member next = fleet.start(
                        "publish-b",
                        "publish",
                        "--model",
                        "m",
                        "--file",
                        b.toString(),
                        "--notifier",
                        notifier,
                        "--linger",
                        "0");
                assertEquals(0, next.exit(WAIT), next.stderr());
                int closed = 0;
                for (Socket s : flood) {
                    if (closedByBroker(s)) {
                        closed++;
                    }
                }
                System.out.println("fault: case 4: " + flood.size() + " connections from " + ADDRESSES
                        + " addresses that never authenticate: the broker closed " + closed
                        + "; a consumer and a producer with the key were served meanwhile");
                assertTrue(
                        closed >= flood.size() - 32,
                        "the broker holds at most 32 unauthenticated connections, it closed only " + closed + " of "
                                + flood.size());
                assertTrue(
                        producer.stderr().contains("viper.limits.connections"),
                        "one line says why: " + producer.stderr());
            } finally {
                for (Socket s : flood) {
                    s.close();
                }
            }
        }
    }

    /** Whether the broker closed {@code s}: its challenge, if it came, then the end of the stream. */
    private static boolean closedByBroker(Socket s) {
        try {
            InputStream in = s.getInputStream();
            byte[] buf = new byte[256];
            while (true) {
                if (in.read(buf) < 0) {
                    return true;
                }
            }
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset
        }
    }
}
