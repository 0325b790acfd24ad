package io.viper.cli;

import io.viper.CheckpointPolicy;
import io.viper.Snapshot;
import io.viper.Viper;
import io.viper.ViperProducer;
import io.viper.tensor.DType;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The producer of {@link KilledProducerIT}, run as its own JVM: hosts the notifier, publishes v1 (1 MiB of bytes 1) and
 * prints {@code NOTIFIER <uri>}; on the line {@code publish} from stdin publishes v2 ({@code args[1]} bytes of 2) and
 * then waits to be killed.
 */
public final class KilledProducerMain {
    private KilledProducerMain() {}

    public static void main(String[] args) throws Exception {
        String scheme = args[0];
        long big = Long.parseLong(args[1]);
        try (Arena arena = Arena.ofShared();
                Viper viper = Viper.builder()
                        .notifier("embedded://127.0.0.1:0")
                        .transports(scheme + "://127.0.0.1:0")
                        .config("viper.producer.staging.budget.bytes", Long.toString(2 * big + (8 << 20)))
                        .build();
                ViperProducer producer = viper.producer("killed", CheckpointPolicy.never())) {
            producer.publish(model(arena, 1 << 20, (byte) 1), Map.of());
            producer.flush();
            System.out.println("NOTIFIER " + viper.notifierUri());
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            if ("publish".equals(in.readLine())) {
                producer.publish(model(arena, big, (byte) 2), Map.of());
            }
            Thread.sleep(Long.MAX_VALUE);
        }
    }

    private static Snapshot model(Arena arena, long size, byte value) {
        MemorySegment s = arena.allocate(size);
        s.fill(value);
        return sink -> sink.add("w", DType.U8, new long[] {size}, s);
    }
}
