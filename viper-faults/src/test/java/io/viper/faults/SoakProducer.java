package io.viper.faults;

import io.viper.CheckpointPolicy;
import io.viper.Snapshot;
import io.viper.Viper;
import io.viper.ViperProducer;
import io.viper.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;

/**
 * The soak's training job, in a JVM of its own: publishes a model of {@code args[1]} bytes to {@code args[0]} (an
 * embedded broker it hosts) every {@code args[2]} ms for {@code args[3]} s, changing one byte in 64 KiB each time as an
 * optimizer step would change some. Prints {@code NOTIFIER uri} once, then one line per version.
 */
public final class SoakProducer {
    private SoakProducer() {}

    public static void main(String[] args) throws Exception {
        long size = Long.parseLong(args[1]);
        long everyMs = Long.parseLong(args[2]);
        long endNanos = System.nanoTime() + Long.parseLong(args[3]) * 1_000_000_000L;
        try (Arena arena = Arena.ofShared();
                Viper viper = Viper.builder()
                        .notifier(args[0])
                        .transports("tcp://127.0.0.1:0")
                        .build();
                ViperProducer producer = viper.producer("m", CheckpointPolicy.never())) {
            MemorySegment w = arena.allocate(size);
            w.fill((byte) 1);
            Snapshot snapshot = sink -> sink.add("w", DType.U8, new long[] {size}, w);
            System.out.println("NOTIFIER " + viper.notifierUri());
            System.out.flush();
            for (int step = 0; System.nanoTime() < endNanos; step++) {
                for (long at = (step * 4099L) % 65_536; at < size; at += 65_536) {
                    w.set(ValueLayout.JAVA_BYTE, at, (byte) step);
                }
                producer.publish(snapshot, Map.of("step", Integer.toString(step)));
                System.out.println("published " + step);
                System.out.flush();
                Thread.sleep(everyMs);
            }
            producer.flush();
        }
    }
}
