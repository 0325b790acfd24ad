package io.viper.transfer.ucx.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.testing.RawPeer;
import io.viper.testing.TestStagedCheckpoint;
import io.viper.transfer.ucx.UcxTransportProvider;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The producer's control channel against malformed and misbehaving consumers. */
class UcxServerProtocolTest {
    private UcxServer server;
    private TestStagedCheckpoint staged;

    @BeforeEach
    void start() {
        var reason = new UcxTransportProvider().unavailableReason();
        Assumptions.assumeTrue(reason.isEmpty(), () -> "ucx unavailable: " + reason.orElse(""));
        server = UcxServer.open(URI.create("ucx://127.0.0.1:0"), ViperConfig.defaults());
        staged = new TestStagedCheckpoint("proto", 3, 5, 4096);
        server.expose(staged);
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
        if (staged != null) {
            staged.close();
        }
    }

    /**
     * A raw connection past the handshake (the server has no secret): what it sends next reaches the control protocol.
     */
    private RawPeer connect() throws Exception {
        return RawPeer.authenticated("127.0.0.1", server.location().uri().getPort(), "ucx");
    }

    private static void write(RawPeer s, ByteBuffer frame) throws IOException {
        s.send(Arrays.copyOfRange(frame.array(), frame.arrayOffset(), frame.arrayOffset() + frame.limit()));
    }

    private static void assertClosedByServer(RawPeer s) throws IOException {
        assertEquals(-1, s.in.read(), "server closed the connection");
    }

    @Test
    void wrongMagicClosesTheConnection() throws Exception {
        try (RawPeer s = connect()) {
            s.out.writeInt(0x47455420); // "GET "
            assertClosedByServer(s);
        }
        try (RawPeer s = new RawPeer("127.0.0.1", server.location().uri().getPort(), 10_000)) {
            s.readFrame(); // the challenge: all a peer gets before it answers it
            s.out.writeInt(ControlProtocol.MAGIC); // no proof, the old protocol's opening
            s.out.flush();
            assertClosedByServer(s);
        }
    }

    @Test
    void badFrameLengthsAndUnknownTypesCloseTheConnection() throws Exception {
        for (int[] frame :
                new int[][] {{0}, {ControlProtocol.MAX_FRAME + 1}, {-5}, {1, 99}, {1, ControlProtocol.GRANT}}) {
            try (RawPeer s = connect()) {
                DataOutputStream out = s.out;
                out.writeInt(ControlProtocol.MAGIC);
                out.writeInt(frame[0]);
                if (frame.length > 1) {
                    out.writeByte(frame[1]);
                }
                out.flush();
                assertClosedByServer(s);
            }
        }
    }

    @Test
    void malformedLeaseClosesTheConnection() throws Exception {
        for (ByteBuffer bad : new ByteBuffer[] {
            ControlProtocol.lease("../etc", 3),
            ControlProtocol.lease("proto", 0),
            ByteBuffer.allocate(7)
                    .putInt(3)
                    .put(ControlProtocol.LEASE)
                    .putShort((short) 40)
                    .flip()
        }) {
            try (RawPeer s = connect()) {
                s.out.writeInt(ControlProtocol.MAGIC);
                write(s, bad);
                assertClosedByServer(s);
            }
        }
    }

    @Test
    void unknownVersionIsNotAvailableAndReleaseOfUnknownLeaseCloses() throws Exception {
        try (RawPeer s = connect()) {
            DataInputStream in = s.in;
            s.out.writeInt(ControlProtocol.MAGIC);
            write(s, ControlProtocol.lease("proto", 4));
            int len = in.readInt();
            assertEquals(ControlProtocol.NOT_AVAILABLE, in.readByte());
            byte[] p = new byte[len - 1];
            in.readFully(p);
            assertTrue(ControlProtocol.parseNotAvailable(ByteBuffer.wrap(p)).contains("proto v4"));
            write(s, ControlProtocol.release(12345));
            assertClosedByServer(s);
        }
    }

    @Test
    void leasesOfADroppedConnectionAreClosed() throws Exception {
        try (RawPeer s = connect()) {
            DataInputStream in = s.in;
            s.out.writeInt(ControlProtocol.MAGIC);
            write(s, ControlProtocol.lease("proto", 3));
            write(s, ControlProtocol.lease("proto", 3));
            for (int i = 0; i < 2; i++) {
                int len = in.readInt();
                assertEquals(ControlProtocol.GRANT, in.readByte());
                byte[] p = new byte[len - 1];
                in.readFully(p);
                ControlProtocol.Grant g = ControlProtocol.parseGrant(ByteBuffer.wrap(p));
                assertEquals(4096, g.size());
                assertTrue(g.rkey().length > 0 && g.workerAddress().length > 0);
            }
            assertEquals(2, staged.openLeases());
        }
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (staged.openLeases() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, staged.openLeases(), "leases closed when the consumer's connection dropped");
    }

    @Test
    void leaseReadAnswersWithTheBytesAndClosesItsLeaseAtOnce() throws Exception {
        try (RawPeer s = connect()) {
            DataInputStream in = s.in;
            s.out.writeInt(ControlProtocol.MAGIC);
            write(s, ControlProtocol.leaseRead("proto", 3, new long[] {4000, 10}, new long[] {96, 20}));
            assertEquals(17, in.readInt());
            assertEquals(ControlProtocol.DATA, in.readByte());
            assertEquals(4096, in.readLong(), "the version's size");
            assertEquals(116, in.readLong(), "the bytes that follow");
            byte[] got = new byte[116];
            in.readFully(got);
            byte[] expected = new byte[116];
            MemorySegment.copy(staged.data(), ValueLayout.JAVA_BYTE, 4000, expected, 0, 96);
            MemorySegment.copy(staged.data(), ValueLayout.JAVA_BYTE, 10, expected, 96, 20);
            assertArrayEquals(expected, got, "the ranges, in request order");
            assertEquals(0, staged.openLeases(), "closed before the next frame is read");
            // The connection carries the next request: a version not served is NOT_AVAILABLE, and it stays open.
            write(s, ControlProtocol.leaseRead("proto", 9, new long[] {0}, new long[] {1}));
            int len = in.readInt();
            assertEquals(ControlProtocol.NOT_AVAILABLE, in.readByte());
            in.skipNBytes(len - 1);
            write(s, ControlProtocol.lease("proto", 3));
            in.readInt();
            assertEquals(ControlProtocol.GRANT, in.readByte());
        }
    }

    @Test
    void leaseReadOutsideTheDataOrTooLargeClosesTheConnection() throws Exception {
        for (ByteBuffer bad : new ByteBuffer[] {
            ControlProtocol.leaseRead("proto", 3, new long[] {4000}, new long[] {97}),
            ControlProtocol.leaseRead("proto", 3, new long[] {0, 0}, new long[] {ControlProtocol.MAX_INLINE, 1}),
            ControlProtocol.leaseRead("proto", 3, new long[] {-1}, new long[] {1})
        }) {
            try (RawPeer s = connect()) {
                s.out.writeInt(ControlProtocol.MAGIC);
                write(s, bad);
                assertClosedByServer(s);
            }
        }
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (staged.openLeases() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, staged.openLeases(), "a refused read leaves no lease behind");
    }
}
