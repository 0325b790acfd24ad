package io.viper.cli.bench;

import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.cli.CliLogging;
import io.viper.format.SafetensorsFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * The consumer side of {@code viper bench transfer}, run as a separate JVM. Prints {@code ready} once subscribed, then
 * {@code swapped <version> <bytes> <transfer ms> <verify ms> <path> <reused bytes> <swapped ns>} for every version it
 * serves, on stdout (the transfer from the start of the load until the bytes were in, the verification after that until
 * the swap, as {@link io.viper.ModelUpdate} has them; {@code swapped ns} is {@link System#nanoTime()} as the update
 * listener starts, right after the swap). On Linux {@code nanoTime} reads {@code CLOCK_MONOTONIC}, one clock for every
 * process of the machine, so the parent measures publish to swap without the time this line takes to reach it through
 * the pipe.
 *
 * <p>Modes: {@code viper NOTIFIER MODEL PATHS [PFS]} uses the Viper SDK restricted to the given transport schemes;
 * {@code poll DIR INTERVAL_MS} is the baseline users have today (Triton's poll mode): look at the repository directory
 * every interval and load a new version by reading its file into memory.
 */
public final class BenchConsumerMain {
    private BenchConsumerMain() {}

    public static void main(String[] args) throws Exception {
        // The benchmark's stderr is the user's terminal: the same quiet logging as the parent.
        CliLogging.configure(Boolean.getBoolean("viper.bench.verbose"));
        switch (args[0]) {
            case "viper" -> viper(args[1], args[2], args[3], args[4].equals("-") ? null : args[4], config(args, 5));
            case "poll" -> poll(Path.of(args[1]), Long.parseLong(args[2]));
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    /** The {@code key=value} arguments from {@code from} on: the consumer configuration the parent checked. */
    private static Map<String, String> config(String[] args, int from) {
        Map<String, String> config = new LinkedHashMap<>();
        for (int i = from; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            config.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        return config;
    }

    private static void viper(String notifier, String model, String paths, String pfs, Map<String, String> config)
            throws InterruptedException {
        Viper.Builder b = Viper.builder()
                .notifier(notifier)
                .consumerPaths(paths.split(","))
                .config("viper.consumer.host.budget.bytes", "64g");
        config.forEach(b::config);
        if (paths.contains("cuda")) {
            // The GPU paths land in GPU memory: the consumer serves on GPU 0.
            b.config("viper.consumer.device", "gpu").config("viper.consumer.gpu.budget.bytes", "64g");
        }
        if (pfs != null) {
            b.pfsRoot(Path.of(pfs));
        }
        try (Viper viper = b.build();
                ViperConsumer consumer = viper.consumer(model)) {
            consumer.onUpdate(u -> {
                long swappedNs = System.nanoTime();
                System.out.println("swapped " + u.version() + " " + u.bytes() + " " + u.transferMs() + " "
                        + u.verifyMs() + " " + u.path() + " " + u.reusedBytes() + " " + swappedNs);
                System.out.flush();
            });
            System.out.println("ready");
            System.out.flush();
            new CountDownLatch(1).await();
        }
    }

    /** Polls {@code dir/<model>/LATEST}; loads (copies into memory) each new version it names. */
    private static void poll(Path modelDir, long intervalMs) throws Exception {
        System.out.println("ready");
        System.out.flush();
        long seen = 0;
        Arena arena = Arena.ofShared();
        MemorySegment buffer = null;
        while (true) {
            long latest = readLatest(modelDir.resolve("LATEST"));
            if (latest > seen) {
                Path file = modelDir.resolve(Long.toString(latest)).resolve("model.safetensors");
                try (SafetensorsFile f = SafetensorsFile.open(file)) {
                    long size = f.dataBytes();
                    if (buffer == null || buffer.byteSize() < size) {
                        buffer = arena.allocate(Math.max(1, size), 4096);
                    }
                    long off = 0;
                    for (var t : f.tensors()) {
                        MemorySegment.copy(t.data(), 0, buffer, off, t.byteSize());
                        off += t.byteSize();
                    }
                    System.out.println("swapped " + latest + " " + size + " NaN NaN file 0 " + System.nanoTime());
                    System.out.flush();
                }
                seen = latest;
            }
            Thread.sleep(intervalMs);
        }
    }

    private static long readLatest(Path latest) {
        try {
            return Long.parseLong(Files.readString(latest).trim());
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
    }
}
