package io.viper.demo.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.demo.internal.DemoEvents.ConsumerProgress;
import io.viper.demo.internal.DemoEvents.ConsumerReady;
import io.viper.demo.internal.DemoEvents.ConsumerResult;
import io.viper.demo.internal.DemoEvents.ProducerProgress;
import io.viper.demo.internal.DemoEvents.ProducerReady;
import io.viper.demo.internal.DemoEvents.ProducerResult;
import io.viper.demo.internal.DemoEvents.Update;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a process writes, the driver reads back as the same event. */
class DemoEventsTest {
    @Test
    void producerEventsSurviveTheLine() throws Exception {
        String line = DemoEvents.PRODUCER.encode(new ProducerReady("embedded://127.0.0.1:4711", 1, 9640));
        assertTrue(line.startsWith("{\"event\":\"ready\",") && !line.contains("\n"), line);
        assertEquals(new ProducerReady("embedded://127.0.0.1:4711", 1, 9640), DemoEvents.PRODUCER.decode(line));
        assertEquals(
                new ProducerProgress(250, 7, 0.125),
                DemoEvents.PRODUCER.decode(DemoEvents.PRODUCER.encode(new ProducerProgress(250, 7, 0.125))));

        ProducerResult r = new ProducerResult(
                2, new long[] {30, 40}, new long[] {2, 3}, 0.75, new double[] {0.25, 0.5}, 1.5, Double.NaN, new long[] {
                    505
                });
        String result = DemoEvents.PRODUCER.encode(r);
        assertTrue(result.contains("\"stall_ms\":0.75") && result.contains("\"max_late_ms\":1.5"), result);
        ProducerResult back = assertInstanceOf(ProducerResult.class, DemoEvents.PRODUCER.decode(result));
        assertEquals(2, back.checkpoints());
        assertArrayEquals(r.iterations(), back.iterations());
        assertArrayEquals(r.versions(), back.versions());
        assertArrayEquals(r.stallsMs(), back.stallsMs());
        assertEquals(0.75, back.stallMs());
        assertEquals(1.5, back.maxLateMs());
        assertTrue(Double.isNaN(back.predictedCil()));
        assertArrayEquals(new long[] {505}, back.changes());
    }

    @Test
    void consumerEventsSurviveTheLineNotANumberIncluded() throws Exception {
        assertEquals(
                new ConsumerReady(1), DemoEvents.CONSUMER.decode(DemoEvents.CONSUMER.encode(new ConsumerReady(1))));
        assertEquals(
                new ConsumerProgress(10, 90, 37, 2, 0.5),
                DemoEvents.CONSUMER.decode(DemoEvents.CONSUMER.encode(new ConsumerProgress(10, 90, 37, 2, 0.5))));
        ConsumerResult r = new ConsumerResult(
                3,
                new double[] {1.75, 2.5},
                2,
                new double[] {0.5, Double.NaN, 1.25},
                new long[] {1, 1, 2},
                List.of(new Update(1, Double.NaN, "tcp"), new Update(2, 3.5, "ucx")));
        ConsumerResult back =
                assertInstanceOf(ConsumerResult.class, DemoEvents.CONSUMER.decode(DemoEvents.CONSUMER.encode(r)));
        assertEquals(3, back.requests());
        assertArrayEquals(r.cils(), back.cils());
        assertEquals(2, back.correct());
        assertArrayEquals(r.losses(), back.losses());
        assertArrayEquals(r.versions(), back.versions());
        assertEquals(r.updates(), back.updates());
    }

    @Test
    void linesThatAreNotEventsOfTheProtocolAreRefused() {
        assertThrows(IOException.class, () -> DemoEvents.PRODUCER.decode("{\"event\":\"hello\"}"));
        assertThrows(IOException.class, () -> DemoEvents.PRODUCER.decode("{not json"));
        assertThrows(IllegalArgumentException.class, () -> DemoEvents.PRODUCER.encode(new ConsumerReady(1)));
    }

    @Test
    void theNotifierCommandCarriesItsAddress() throws Exception {
        assertEquals(
                "embedded://127.0.0.1:4711",
                DemoEvents.parseNotifier(DemoEvents.notifier("embedded://127.0.0.1:4711")));
        assertThrows(IOException.class, () -> DemoEvents.parseNotifier(null));
        assertThrows(IOException.class, () -> DemoEvents.parseNotifier(DemoEvents.start(1)));
        assertThrows(IOException.class, () -> DemoEvents.parseNotifier("notifier "));
    }

    @Test
    void theStartCommandCarriesItsInstant() throws Exception {
        assertEquals(1_700_000_000_123L, DemoEvents.parseStart(DemoEvents.start(1_700_000_000_123L)));
        assertThrows(IOException.class, () -> DemoEvents.parseStart(null));
        assertThrows(IOException.class, () -> DemoEvents.parseStart(DemoEvents.STOP));
        assertThrows(IOException.class, () -> DemoEvents.parseStart("start soon"));
    }
}
