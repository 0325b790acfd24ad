package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.CheckpointPolicy;
import io.viper.ModelLease;
import io.viper.ModelUpdate;
import io.viper.Snapshot;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.ViperProducer;
import io.viper.spi.Providers;
import io.viper.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A relay over ucx://, in one process with the embedded broker: a consumer relays on tcp:// and ucx://; a late joiner
 * that may read over ucx only asks the producer's tracker on its tcp:// location (ucx has no tracker request), is sent
 * to the relay, and reads the whole version from its ucx:// server, which serves a relayed version once it is whole.
 */
class UcxRelayTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final long BYTES = 6L << 20;

    @Test
    void aLateJoinerReadsAWholeVersionFromARelayOverUcx() {
        Optional<String> why = Providers.transport("ucx").flatMap(p -> p.unavailableReason());
        assumeTrue(why.isEmpty(), () -> "UCX is not usable here: " + why.orElse(""));
        try (Arena arena = Arena.ofShared();
                Viper p = Viper.builder()
                        .notifier("embedded://127.0.0.1:0")
                        .transports("ucx://127.0.0.1:0", "tcp://127.0.0.1:0")
                        .meterRegistry(new SimpleMeterRegistry())
                        .build();
                ViperProducer producer = p.producer("m", CheckpointPolicy.never());
                Viper relayV = consumerViper(p, "tcp,ucx", "tcp://127.0.0.1:0,ucx://127.0.0.1:0");
                ViperConsumer relay = relayV.consumer("m")) {
            MemorySegment w = arena.allocate(BYTES);
            for (long i = 0; i < BYTES; i += 8) {
                w.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
            }
            Snapshot s = sink -> sink.add("w", DType.U8, new long[] {BYTES}, w);
            producer.publish(s, Map.of());
            relay.awaitVersion(1, WAIT);
            List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
            try (Viper lateV = consumerViper(p, "ucx", "");
                    ViperConsumer late = lateV.consumer("m")) {
                late.onUpdate(updates::add);
                late.awaitVersion(1, WAIT);
                try (ModelLease l = late.current()) {
                    assertEquals(-1, w.mismatch(l.tensor("w").data()), "the relayed bytes are the published ones");
                }
            }
            ModelUpdate u = updates.getFirst();
            assertEquals("ucx", u.path());
            assertEquals(BYTES, u.bytesFromRelays(), "read from the relay: " + u);
            assertEquals(0, u.bytesFromProducer());
        }
    }

    private static Viper consumerViper(Viper producer, String paths, String relay) {
        Viper.Builder b = Viper.builder()
                .notifier(producer.notifierUri().toString())
                .consumerPaths(paths.split(","))
                .meterRegistry(new SimpleMeterRegistry());
        if (!relay.isEmpty()) {
            b.config("viper.consumer.relay.transports", relay);
        }
        return b.build();
    }
}
