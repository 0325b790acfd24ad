package io.viper.notify.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.hash.ContentHash;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider.Role;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import io.viper.testing.Ports;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A producer that hosts the broker: publications handed over in the process, a second producer that joins, and the
 * latest version a starting producer learns.
 */
class EmbeddedHostingTest extends EmbeddedNotifierTestBase {
    @Test
    void theHostingProducerHandsPublicationsToItsBrokerAndLearnsTheAnswerLater() throws Exception {
        Notifier host = own(provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, FAST));
        Notifier remote = own(provider.open(host.uri(), Role.PRODUCER, FAST));
        Notifier consumer = own(provider.open(host.uri(), Role.CONSUMER, FAST));
        assertTrue(host.publishesLocally(), "the broker is in the hosting producer's process");
        assertFalse(remote.publishesLocally(), "a producer that connects to the broker waits on the network");
        UnsupportedOperationException notHere = assertThrows(
                UnsupportedOperationException.class,
                () -> remote.publishLocally(
                        manifest("loc", 1, "tcp://127.0.0.1:1"), MemorySegment.ofArray(new byte[16])));
        assertTrue(notHere.getMessage().contains("the broker is not in this process"), notHere.getMessage());

        DataCollector c = new DataCollector();
        own(consumer.subscribe("loc", c));
        byte[] v1 = new byte[16];
        new Random(3).nextBytes(v1);
        MemorySegment staging = Arena.ofAuto().allocate(16);
        MemorySegment.copy(v1, 0, staging, ValueLayout.JAVA_BYTE, 0, 16);
        CompletableFuture<Void> accepted = host.publishLocally(manifest("loc", 1, "tcp://127.0.0.1:1"), staging);
        staging.fill((byte) 0); // read before publishLocally returned: the caller may reuse its buffer at once
        accepted.get(10, TimeUnit.SECONDS);
        Map.Entry<Manifest, byte[]> got = c.next();
        assertEquals(1, got.getKey().version());
        assertArrayEquals(v1, got.getValue());

        // A refusal completes the future with what publish would throw.
        Manifest otherBytes = new Manifest(
                "loc",
                1,
                "impostor",
                0,
                new LinkedHashMap<>(),
                List.of(new TensorEntry(
                        new TensorInfo("w", DType.F32, new long[] {4}, 0, 16), new ContentHash(66, 66))),
                List.of());
        CompletableFuture<Void> stale = host.publishLocally(otherBytes, MemorySegment.ofArray(new byte[16]));
        ExecutionException e = assertThrows(ExecutionException.class, () -> stale.get(10, TimeUnit.SECONDS));
        assertInstanceOf(ViperConfigException.class, e.getCause());
        assertTrue(
                e.getCause().getMessage().contains("it holds another v1 of loc"),
                e.getCause().getMessage());
    }

    @Test
    void producerHostsTheBrokerAndASecondProducerJoinsIt() throws Exception {
        Notifier host = provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, FAST);
        URI uri = host.uri();
        assertNotEquals(0, uri.getPort(), "uri() names the real port");
        Notifier second = own(provider.open(uri, Role.PRODUCER, FAST));
        assertEquals(uri, second.uri());
        Notifier consumer = own(provider.open(uri, Role.CONSUMER, FAST));
        Collector c = new Collector();
        own(consumer.subscribe("hosted", c));
        host.publish(manifest("hosted", 1, "tcp://127.0.0.1:1"));
        assertEquals(1, c.next().version());
        second.publish(manifest("hosted", 2, "tcp://127.0.0.1:1"));
        assertEquals(2, c.next().version());
        // The hosting producer goes away, and with it the broker: the consumer is told and keeps trying.
        host.close();
        assertTrue(c.problem().contains(uri.toString()), "the problem names the broker");
    }

    @Test
    void theBrokerTellsAStartingProducerTheLatestVersionUnlessItIsNewOnAFixedPort() throws Exception {
        Notifier hostOnAnyPort = own(provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, FAST));
        assertEquals(
                OptionalLong.of(0),
                hostOnAnyPort.latestVersion("lv"),
                "a broker on a new port: nobody can hold a version yet");
        hostOnAnyPort.publish(manifest("lv", 5, "tcp://127.0.0.1:1"));
        Notifier other = own(provider.open(hostOnAnyPort.uri(), Role.PRODUCER, FAST));
        assertEquals(OptionalLong.of(5), other.latestVersion("lv"));
        assertEquals(OptionalLong.of(0), other.latestVersion("never"));

        Notifier hostOnFixedPort =
                own(provider.open(URI.create("embedded://127.0.0.1:" + Ports.free()), Role.PRODUCER, FAST));
        assertEquals(
                OptionalLong.empty(),
                hostOnFixedPort.latestVersion("lv"),
                "a broker just started where an earlier one may have announced versions cannot vouch for them");
        hostOnFixedPort.publish(manifest("lv", 2, "tcp://127.0.0.1:1"));
        assertEquals(OptionalLong.of(2), hostOnFixedPort.latestVersion("lv"));
    }
}
