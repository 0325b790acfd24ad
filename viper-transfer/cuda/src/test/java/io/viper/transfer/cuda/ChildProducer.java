package io.viper.transfer.cuda;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A second JVM running {@link IpcProducerMain} with this test's class path. */
final class ChildProducer implements AutoCloseable {
    private final Process process;
    private final BufferedReader out;
    private final PrintStream in;
    final URI uri;

    /** Serves model {@code ipc} v1. */
    ChildProducer(long size, long seed) throws IOException {
        this("ipc", size, seed);
    }

    /** Serves {@code model} v1: {@code size} bytes of seed {@code seed}, staged in GPU memory. */
    ChildProducer(String model, long size, long seed) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(IpcProducerMain.class.getName());
        cmd.add(Long.toString(size));
        cmd.add(Long.toString(seed));
        cmd.add(model);
        process = new ProcessBuilder(cmd)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        in = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
        String line = out.readLine();
        if (line == null || !line.startsWith("PORT ")) {
            process.destroyForcibly();
            throw new IOException("producer process did not start: " + line);
        }
        uri = URI.create("cuda-ipc://127.0.0.1:" + line.substring(5).trim());
    }

    /** {open leases, leases taken} in the producer. */
    long[] leases() throws IOException {
        in.println("LEASES");
        String[] parts = out.readLine().split(" ");
        return new long[] {Long.parseLong(parts[1]), Long.parseLong(parts[2])};
    }

    @Override
    public void close() throws IOException {
        in.close();
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
