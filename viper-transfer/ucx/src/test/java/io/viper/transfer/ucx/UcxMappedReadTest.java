package io.viper.transfer.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportServer;
import io.viper.testing.TestStagedCheckpoint;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code viper.ucx.mapped}: a producer on this host is read by copying from its memory as UCX maps it here with the
 * reader's {@code Arrivals.copy} (calls of up to 64 MiB); with the key off, by RDMA GETs of
 * {@code viper.ucx.chunk.bytes} each. Either way every byte arrives exactly, once, and the lease is released.
 */
class UcxMappedReadTest {
    private static final long MIB = 1L << 20;

    @ParameterizedTest(name = "viper.ucx.mapped={0}")
    @ValueSource(booleans = {true, false})
    void aProducerOnThisHostIsCopiedFromItsMappedMemoryUnlessTheKeyIsOff(boolean mapped) throws Exception {
        UcxTransportProvider provider = new UcxTransportProvider();
        Assumptions.assumeTrue(
                provider.unavailableReason().isEmpty(),
                () -> "ucx unavailable here: " + provider.unavailableReason().orElse(""));
        ViperConfig config =
                ViperConfig.of(Map.of("viper.ucx.mapped", Boolean.toString(mapped), "viper.ucx.chunk.bytes", "1m"));
        try (TestStagedCheckpoint s = new TestStagedCheckpoint("mapped", 1, 5, 20 * MIB + 3, 4 * MIB);
                TransportServer server = provider.openServer(URI.create("ucx://127.0.0.1:0"), config);
                TransportClient client = provider.openClient(config);
                Arena arena = Arena.ofShared()) {
            server.expose(s);
            long total = s.manifest().totalBytes();
            MemorySegment dst = arena.allocate(total, 64);
            List<long[]> arrived = Collections.synchronizedList(new ArrayList<>());
            List<long[]> copiedByReader = Collections.synchronizedList(new ArrayList<>());
            client.read(
                    s.manifest(),
                    server.location(),
                    List.of(new ByteRange(0, total, 0)),
                    dst,
                    new TransportClient.Arrivals() {
                        @Override
                        public void arrived(long offset, long length) {
                            arrived.add(new long[] {offset, length});
                        }

                        @Override
                        public void copy(MemorySegment source, MemorySegment destination, long destinationOffset) {
                            copiedByReader.add(new long[] {destinationOffset, source.byteSize()});
                            TransportClient.Arrivals.super.copy(source, destination, destinationOffset);
                        }
                    });
            assertEquals(-1, s.data().mismatch(dst), "bytes read");
            assertEquals(total, arrived.stream().mapToLong(a -> a[1]).sum(), "every byte reported once");
            long largest = arrived.stream().mapToLong(a -> a[1]).max().orElse(0);
            if (mapped) {
                // The reader copies (a verifier checks as it copies), in calls of up to 64 MiB: here the whole model at
                // once.
                assertEquals(
                        List.of(List.of(0L, total)),
                        copiedByReader.stream().map(c -> List.of(c[0], c[1])).toList(),
                        "copied from the mapped memory by the reader's copy");
            } else {
                assertTrue(copiedByReader.isEmpty(), "GETs move the bytes, the reader copies nothing");
                assertTrue(largest <= MIB, "read by GETs of 1 MiB, the largest piece was " + largest);
            }
            assertEquals(0, s.openLeases(), "the lease was released");
        }
    }
}
