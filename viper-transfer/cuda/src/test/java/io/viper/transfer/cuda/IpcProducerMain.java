package io.viper.transfer.cuda;

import io.viper.testing.DeviceStagedCheckpoint;
import io.viper.testing.TestStagedCheckpoint;
import io.viper.transfer.cuda.internal.IpcServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;

/**
 * The producer process of the two-process CUDA IPC tests: stages {@code args[0]} bytes of seed {@code args[1]} in GPU
 * memory as v1 of model {@code args[2]} ("ipc" when absent), serves it on cuda-ipc, prints {@code PORT n}, then answers
 * {@code LEASES} with the number of open read leases until stdin closes.
 */
public final class IpcProducerMain {
    private IpcProducerMain() {}

    public static void main(String[] args) throws Exception {
        long size = Long.parseLong(args[0]);
        long seed = Long.parseLong(args[1]);
        String model = args.length > 2 ? args[2] : "ipc";
        try (TestStagedCheckpoint host = new TestStagedCheckpoint(model, 1, seed, size);
                DeviceStagedCheckpoint staged = GpuTests.deviceStaged(host, 0);
                IpcServer server =
                        new IpcServer(URI.create("cuda-ipc://127.0.0.1:0"), io.viper.ViperConfig.defaults())) {
            server.expose(staged);
            System.out.println("PORT " + server.location().uri().getPort());
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                if (line.equals("LEASES")) {
                    System.out.println("LEASES " + host.openLeases() + " " + host.leasesTaken());
                    System.out.flush();
                }
            }
        }
    }
}
