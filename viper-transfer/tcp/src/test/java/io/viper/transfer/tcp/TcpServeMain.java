package io.viper.transfer.tcp;

import io.viper.ViperConfig;
import io.viper.spi.TransportServer;
import io.viper.testing.TestStagedCheckpoint;
import java.net.URI;

/**
 * Child process of {@link TcpTwoProcessIT}: stages a checkpoint of {@code args[0]} bytes from seed {@code args[1]},
 * serves it over {@code tcp://127.0.0.1:0}, prints {@code LOCATION <uri>} and serves until its standard input closes
 * (the parent exited or closed it).
 */
public final class TcpServeMain {
    private TcpServeMain() {}

    public static void main(String[] args) throws Exception {
        long bytes = Long.parseLong(args[0]);
        long seed = Long.parseLong(args[1]);
        long half = bytes / 2;
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("it", 1, seed, half, bytes - half);
                TransportServer server = new TcpTransportProvider()
                        .openServer(URI.create("tcp://127.0.0.1:0"), ViperConfig.defaults())) {
            server.expose(staged);
            System.out.println("LOCATION " + server.location().uri());
            System.out.flush();
            while (System.in.read() >= 0) {
                // Serve until the parent closes our stdin.
            }
        }
    }
}
