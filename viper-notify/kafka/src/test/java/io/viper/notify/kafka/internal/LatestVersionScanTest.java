package io.viper.notify.kafka.internal;

import static io.viper.notify.kafka.internal.ManifestFollowerTest.manifest;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link LatestVersionScan} on Kafka's {@link MockConsumer}: no broker, deterministic records. */
class LatestVersionScanTest {
    private static final KafkaUri URI_ = KafkaUri.parse(URI.create("kafka://127.0.0.1:1"));

    @ParameterizedTest
    @ValueSource(longs = {1_000, 30_000, Long.MAX_VALUE})
    void findsTheNewestVersionOfTheModelAtAnyNotifyTimeout(long timeoutMs) {
        // at viper.notify.timeout.ms=Long.MAX_VALUE the scan's deadline overflowed (ArithmeticException)
        MockConsumer<byte[], byte[]> c = ManifestFollowerTest.mock(3);
        c.schedulePollTask(() -> {
            c.addRecord(record(0, manifest("a", 2, "tcp://h:1")));
            c.addRecord(record(1, manifest("b", 9, "tcp://h:1")));
            c.addRecord(record(2, manifest("a", 1, "tcp://h:1")));
        });
        assertEquals(OptionalLong.of(2), LatestVersionScan.newest(c, URI_, "a", timeoutMs));
    }

    private static ConsumerRecord<byte[], byte[]> record(long offset, Manifest m) {
        return new ConsumerRecord<>(
                URI_.topic(), 0, offset, m.model().getBytes(StandardCharsets.UTF_8), ManifestCodec.encode(m));
    }
}
