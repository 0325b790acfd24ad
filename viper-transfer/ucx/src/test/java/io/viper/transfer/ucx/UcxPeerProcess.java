package io.viper.transfer.ucx;

import io.viper.ViperConfig;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportServer;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.List;

/**
 * The second process of {@link UcxTwoProcessIT}.
 *
 * <ul>
 *   <li>{@code serve <bytes> <seed>}: exposes a staged checkpoint of that size on {@code ucx://127.0.0.1:0}, prints
 *       {@code LOCATION <uri>}, and serves until its standard input closes.
 *   <li>{@code read <uri> <bytes> <seed> <repeats>}: reads the whole checkpoint that many times, checks the bytes, and
 *       prints {@code GBPS <best GB/s>}.
 * </ul>
 */
public final class UcxPeerProcess {
    private UcxPeerProcess() {}

    public static void main(String[] args) throws IOException {
        switch (args[0]) {
            case "serve" -> serve(Long.parseLong(args[1]), Long.parseLong(args[2]));
            case "read" ->
                read(URI.create(args[1]), Long.parseLong(args[2]), Long.parseLong(args[3]), Integer.parseInt(args[4]));
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    private static void serve(long bytes, long seed) throws IOException {
        UcxTransportProvider provider = new UcxTransportProvider();
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("it", 1, seed, bytes);
                TransportServer server = provider.openServer(URI.create("ucx://127.0.0.1:0"), ViperConfig.defaults())) {
            server.expose(staged);
            System.out.println("LOCATION " + server.location().uri());
            System.out.flush();
            while (System.in.read() >= 0) {
                // serve until the parent closes our standard input
            }
        }
    }

    private static void read(URI uri, long bytes, long seed, int repeats) {
        UcxTransportProvider provider = new UcxTransportProvider();
        try (TestStagedCheckpoint expected = new TestStagedCheckpoint("it", 1, seed, bytes);
                Arena arena = Arena.ofShared();
                TransportClient client = provider.openClient(ViperConfig.defaults())) {
            MemorySegment dst = arena.allocate(bytes, 4096);
            Location loc = new Location(uri, Tier.HOST);
            double best = 0;
            for (int i = 0; i < repeats; i++) {
                dst.fill((byte) 0);
                long t0 = System.nanoTime();
                client.read(expected.manifest(), loc, List.of(new ByteRange(0, bytes, 0)), dst);
                long ns = System.nanoTime() - t0;
                best = Math.max(best, bytes / (double) ns);
                if (expected.data().mismatch(dst) != -1) {
                    System.out.println("MISMATCH at " + expected.data().mismatch(dst));
                    System.exit(2);
                }
            }
            System.out.printf("GBPS %.3f%n", best);
        }
    }
}
