package io.viper.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportServer;
import io.viper.testing.LogCapture;
import io.viper.testing.RawPeer;
import io.viper.testing.TestStagedCheckpoint;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Hostile and broken peers: malformed frames close only their own connection, leases of dead or stuck consumers are
 * released, and the client fails retriably and in bounded time when the producer misbehaves.
 */
class TcpServerRobustnessTest {
    private static final String CONNECTION_LOGGER = "io.viper.transfer.tcp.internal.ServerConnection";

    private final TcpTransportProvider provider = new TcpTransportProvider();
    private TransportServer server;
    private TransportClient client;
    private TestStagedCheckpoint staged;
    private Arena arena;
    private LogCapture log;

    @BeforeAll
    static void warm() {
        // Load and warm the classes once, so that the timeouts below measure the peers, not a cold JVM.
        TcpTransportProvider p = new TcpTransportProvider();
        try (TestStagedCheckpoint s = new TestStagedCheckpoint("warm", 1, 1, 1000);
                TransportServer srv = p.openServer(URI.create("tcp://127.0.0.1:0"), ViperConfig.defaults());
                TransportClient c = p.openClient(ViperConfig.defaults());
                Arena a = Arena.ofConfined()) {
            srv.expose(s);
            c.read(s.manifest(), srv.location(), List.of(new ByteRange(0, 1000, 0)), a.allocate(1000));
        }
    }

    @BeforeEach
    void start() {
        log = new LogCapture(CONNECTION_LOGGER);
        server = provider.openServer(
                URI.create("tcp://127.0.0.1:0"), ViperConfig.of(Map.of("viper.transfer.timeout.ms", "10000")));
        client = provider.openClient(ViperConfig.of(Map.of("viper.transfer.timeout.ms", "10000")));
        staged = new TestStagedCheckpoint("robust", 1, 7, 100_000, 23);
        server.expose(staged);
        arena = Arena.ofShared();
    }

    @AfterEach
    void stop() {
        client.close();
        server.close();
        staged.close();
        arena.close();
        log.close();
    }

    private InetSocketAddress address() {
        URI u = server.location().uri();
        return new InetSocketAddress(u.getHost(), u.getPort());
    }

    /** A good client still reads the checkpoint exactly. */
    private void goodClientReads() {
        MemorySegment dst = arena.allocate(staged.manifest().totalBytes());
        client.read(staged.manifest(), server.location(), List.of(new ByteRange(0, dst.byteSize(), 0)), dst);
        assertEquals(-1, staged.data().mismatch(dst), "bytes read by a good client");
    }

    /** A raw socket past the handshake (the server has no secret), for speaking the protocol by hand. */
    private RawPeer peer() throws Exception {
        return RawPeer.authenticated(address().getHostString(), address().getPort(), "tcp");
    }

    /**
     * Sends {@code bytes} on a raw socket, after the handshake, and returns everything the server answered before
     * closing.
     */
    private byte[] sendRaw(byte[] bytes) throws Exception {
        try (RawPeer s = peer()) {
            s.send(bytes);
            return readToEof(s.in);
        }
    }

    private static byte[] readToEof(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[4096];
        try {
            for (int n; (n = in.read(buf)) >= 0; ) {
                out.write(buf, 0, n);
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the server did not close the connection within 5 s", e);
        } catch (SocketException e) {
            // A reset counts as closed.
        }
        return out.toByteArray();
    }

    private static byte[] frame(int type, byte[] payload) {
        byte[] f = new byte[4 + 2 + payload.length];
        int n = 2 + payload.length;
        f[0] = (byte) (n >>> 24);
        f[1] = (byte) (n >>> 16);
        f[2] = (byte) (n >>> 8);
        f[3] = (byte) n;
        f[4] = io.viper.transfer.tcp.internal.TcpProtocol.VERSION;
        f[5] = (byte) type;
        System.arraycopy(payload, 0, f, 6, payload.length);
        return f;
    }

    private static byte[] leasePayload(String model, long version) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(b);
        byte[] m = model.getBytes(StandardCharsets.UTF_8);
        d.writeLong(version);
        d.writeShort(m.length);
        d.write(m);
        return b.toByteArray();
    }

    private static byte[] readPayload(long leaseId, long... offsetLengthPairs) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(b);
        d.writeLong(leaseId);
        d.writeInt(offsetLengthPairs.length / 2);
        for (long v : offsetLengthPairs) {
            d.writeLong(v);
        }
        return b.toByteArray();
    }

    @Test
    void heapDestinationAndMoreRangesThanOneReadCarries() {
        try (TestStagedCheckpoint big = new TestStagedCheckpoint("ranges", 1, 9, 200_000)) {
            server.expose(big);
            // 70,000 one-byte ranges at even offsets, backwards: more than one READ frame holds, none mergeable.
            int count = 70_000;
            List<ByteRange> ranges = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                ranges.add(new ByteRange(2L * (count - 1 - i), 1, i));
            }
            byte[] heap = new byte[count];
            client.read(big.manifest(), server.location(), ranges, MemorySegment.ofArray(heap));
            byte[] expected = new byte[count];
            for (int i = 0; i < count; i++) {
                expected[i] = big.data().get(ValueLayout.JAVA_BYTE, 2L * (count - 1 - i));
            }
            org.junit.jupiter.api.Assertions.assertArrayEquals(expected, heap);
            // Contiguous ranges are merged into one and land in a heap segment in 1 MiB reads.
            byte[] whole = new byte[200_000];
            client.read(
                    big.manifest(),
                    server.location(),
                    List.of(new ByteRange(0, 1000, 0), new ByteRange(1000, 199_000, 1000)),
                    MemorySegment.ofArray(whole));
            assertEquals(-1, big.data().mismatch(MemorySegment.ofArray(whole)));
            assertEquals(0, big.openLeases());
        }
    }

    @Test
    void withdrawnAndRecycledVersionsAreNotFound() {
        MemorySegment dst = arena.allocate(staged.manifest().totalBytes());
        List<ByteRange> whole = List.of(new ByteRange(0, dst.byteSize(), 0));
        try (TestStagedCheckpoint v2 = new TestStagedCheckpoint("robust", 2, 8, 100_023)) {
            server.expose(v2);
            v2.recycle();
            ViperNotFoundException recycled = assertThrows(
                    ViperNotFoundException.class, () -> client.read(v2.manifest(), server.location(), whole, dst));
            assertTrue(recycled.getMessage().contains("robust v2"), recycled.getMessage());
        }
        server.withdraw(staged);
        ViperNotFoundException withdrawn = assertThrows(
                ViperNotFoundException.class, () -> client.read(staged.manifest(), server.location(), whole, dst));
        assertTrue(
                withdrawn.getMessage().contains("robust v1")
                        && withdrawn
                                .getMessage()
                                .contains(server.location().uri().toString()),
                withdrawn.getMessage());
        // The refusals left the pooled connection usable.
        server.expose(staged);
        goodClientReads();
    }

    @Test
    void garbageClosesOnlyThatConnection() throws Exception {
        goodClientReads();
        byte[] garbage = new byte[4096];
        new Random(1).nextBytes(garbage);
        garbage[0] = 0; // a plausible length prefix, then nonsense
        garbage[1] = 0;
        garbage[2] = 0;
        garbage[3] = 40;
        sendRaw(garbage);
        assertTrue(log.await("closing connection"), "the server logged why it closed the connection: " + log.lines());
        goodClientReads();
    }

    @Test
    void oversizedLengthPrefixIsRefused() throws Exception {
        sendRaw(new byte[] {0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff, 1, 2, 3});
        assertTrue(log.await("malformed frame"), "logged: " + log.lines());
        sendRaw(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xf0, 1, 2});
        goodClientReads();
    }

    @Test
    void wrongVersionUnknownTypeAndShortFramesAreRefused() throws Exception {
        byte[] wrongVersion = frame(0x01, leasePayload("robust", 1));
        wrongVersion[4] = 9;
        byte[] answer = sendRaw(wrongVersion);
        assertTrue(answer.length > 6 && answer[5] == 0x1F, "an ERROR frame came back before the close");
        assertTrue(new String(answer, StandardCharsets.UTF_8).contains("unsupported protocol version 9"));
        sendRaw(frame(0x55, new byte[3]));
        sendRaw(frame(0x01, new byte[3]));
        sendRaw(frame(0x01, leasePayload("../etc", 1)));
        sendRaw(frame(0x01, leasePayload("robust", -4)));
        sendRaw(frame(0x03, new byte[7]));
        sendRaw(new byte[] {0, 0, 0, 1, 1});
        assertTrue(log.await("unexpected frame type unknown(0x55)"), "logged: " + log.lines());
        assertTrue(log.await("invalid model name '../etc'"), "logged: " + log.lines());
        goodClientReads();
    }

    @Test
    void readOutsideTheDataOrOnAnUnknownLeaseIsRefusedAndTheLeaseReleased() throws Exception {
        try (RawPeer s = peer()) {
            DataInputStream in = s.in;
            s.send(frame(0x01, leasePayload("robust", 1)));
            assertEquals(18, in.readInt());
            assertEquals(1, in.readByte());
            assertEquals(0x11, in.readByte(), "LEASED");
            long leaseId = in.readLong();
            assertEquals(staged.manifest().totalBytes(), in.readLong());
            assertEquals(1, staged.openLeases());
            // A range past the end (offset + length overflows too).
            s.send(frame(0x02, readPayload(leaseId, 100_000, 24)));
            byte[] rest = readToEof(in);
            assertTrue(new String(rest, StandardCharsets.UTF_8).contains("lies outside"), "ERROR names the problem");
        }
        awaitNoOpenLeases();
        sendRaw(frame(0x02, readPayload(12345, 0, 1)));
        assertTrue(log.await("READ on unknown lease 12345"), "logged: " + log.lines());
        sendRaw(frame(0x03, ByteBuffer.allocate(8).putLong(12345).array()));
        assertTrue(log.await("RELEASE of unknown lease"), "logged: " + log.lines());
        // Lease 0 (the one the last LEASE took) before any LEASE on the connection.
        sendRaw(frame(0x03, new byte[8]));
        assertTrue(log.await("lease 0 named before any LEASE"), "logged: " + log.lines());
        goodClientReads();
    }

    @Test
    void readsPipelinedBehindARefusedLeaseAreSkippedAndTheConnectionStaysUsable() throws Exception {
        try (RawPeer s = peer()) {
            DataInputStream in = s.in;
            ByteArrayOutputStream request = new ByteArrayOutputStream();
            request.write(frame(0x01, leasePayload("robust", 99))); // not served
            request.write(frame(0x02, readPayload(0, 0, 10)));
            request.write(frame(0x03, new byte[8]));
            // Then the same three for the version that is served, in one write too.
            request.write(frame(0x01, leasePayload("robust", 1)));
            request.write(frame(0x02, readPayload(0, 0, 10)));
            request.write(frame(0x03, new byte[8]));
            s.send(request.toByteArray());
            int n = in.readInt();
            assertEquals(1, in.readByte());
            assertEquals(0x12, in.readByte(), "NOT_AVAILABLE, and nothing for the READ and RELEASE behind it");
            in.skipNBytes(n - 2);
            assertEquals(18, in.readInt());
            assertEquals(1, in.readByte());
            assertEquals(0x11, in.readByte(), "LEASED");
            long leaseId = in.readLong();
            in.readLong();
            assertEquals(10, in.readInt());
            assertEquals(1, in.readByte());
            assertEquals(0x13, in.readByte(), "DATA");
            assertEquals(10, in.readLong());
            in.skipNBytes(10);
            assertEquals(10, in.readInt());
            assertEquals(1, in.readByte());
            assertEquals(0x14, in.readByte(), "RELEASED");
            assertEquals(leaseId, in.readLong(), "of the lease the LEASE took");
        }
        awaitNoOpenLeases();
    }

    @Test
    void deadConsumerLeasesAreReleased() throws Exception {
        try (RawPeer s = peer()) {
            s.send(frame(0x01, leasePayload("robust", 1)));
            s.in.readFully(new byte[22]);
            assertEquals(1, staged.openLeases());
        }
        awaitNoOpenLeases();
        goodClientReads();
    }

    @Test
    void stuckConsumerWithALeaseIsDisconnected() throws Exception {
        // The server's timeout bounds how long a stuck consumer keeps its lease.
        server.close();
        server = provider.openServer(
                URI.create("tcp://127.0.0.1:0"), ViperConfig.of(Map.of("viper.transfer.timeout.ms", "1000")));
        server.expose(staged);
        try (RawPeer s = peer()) {
            s.send(frame(0x01, leasePayload("robust", 1)));
            DataInputStream in = s.in;
            in.readFully(new byte[22]);
            assertEquals(1, staged.openLeases());
            // Says nothing more: after the 1 s timeout the server closes the connection.
            readToEof(in);
        }
        awaitNoOpenLeases();
        assertTrue(log.await("without a request"), "logged: " + log.lines());
    }

    @Test
    void producerThatStopsAnsweringFailsWithinTheTimeout() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread acceptor = Thread.ofVirtual().start(() -> {
                try (Socket s = silent.accept()) {
                    s.getInputStream().read(new byte[64]);
                    Thread.sleep(10_000);
                } catch (IOException | InterruptedException ignored) {
                    // Test peer.
                }
            });
            Location loc = new Location(URI.create("tcp://127.0.0.1:" + silent.getLocalPort()), Tier.HOST);
            MemorySegment dst = arena.allocate(staged.manifest().totalBytes());
            TransportClient impatient = provider.openClient(ViperConfig.of(Map.of("viper.transfer.timeout.ms", "500")));
            long t0 = System.nanoTime();
            RetriableViperException e = assertThrows(
                    RetriableViperException.class,
                    () -> impatient.read(staged.manifest(), loc, List.of(new ByteRange(0, dst.byteSize(), 0)), dst));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            impatient.close();
            assertEquals(ViperException.Reason.TIMEOUT, e.reason(), e.getMessage());
            assertTrue(ms >= 400 && ms < 3000, "failed after " + ms + " ms with a 500 ms timeout");
            assertTrue(
                    e.getMessage().contains("robust v1")
                            && e.getMessage().contains(loc.uri().toString()),
                    e.getMessage());
            acceptor.interrupt();
        }
    }

    @Test
    void producerThatDiesMidStreamFailsAtOnce() throws Exception {
        try (ServerSocket fake = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread.ofVirtual().start(() -> {
                try (Socket s = fake.accept()) {
                    DataInputStream in = new DataInputStream(s.getInputStream());
                    DataOutputStream out = new DataOutputStream(s.getOutputStream());
                    RawPeer.acceptHandshake(in, out, "tcp");
                    in.readFully(new byte[in.readInt()]);
                    out.writeInt(18);
                    out.writeByte(1);
                    out.writeByte(0x11);
                    out.writeLong(1);
                    out.writeLong(staged.manifest().totalBytes());
                    out.flush();
                    in.readFully(new byte[in.readInt()]);
                    out.writeInt(10);
                    out.writeByte(1);
                    out.writeByte(0x13);
                    out.writeLong(staged.manifest().totalBytes());
                    out.write(new byte[1000]);
                    out.flush();
                } catch (IOException | io.viper.auth.Handshake.Refused ignored) {
                    // Test peer.
                }
            });
            Location loc = new Location(URI.create("tcp://127.0.0.1:" + fake.getLocalPort()), Tier.HOST);
            TransportClient slow = provider.openClient(ViperConfig.of(Map.of("viper.transfer.timeout.ms", "60000")));
            MemorySegment dst = arena.allocate(staged.manifest().totalBytes());
            long t0 = System.nanoTime();
            RetriableViperException e = assertThrows(
                    RetriableViperException.class,
                    () -> slow.read(staged.manifest(), loc, List.of(new ByteRange(0, dst.byteSize(), 0)), dst));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            slow.close();
            assertTrue(ms < 5000, "EOF detected at once, took " + ms + " ms");
            assertEquals(ViperException.Reason.TRANSFER, e.reason(), e.getMessage());
        }
    }

    @Test
    void unreachableProducerAndBadArgumentsFailClearly() {
        MemorySegment dst = arena.allocate(staged.manifest().totalBytes());
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        Location nobody = new Location(URI.create("tcp://127.0.0.1:" + port), Tier.HOST);
        RetriableViperException e = assertThrows(
                RetriableViperException.class,
                () -> client.read(staged.manifest(), nobody, List.of(new ByteRange(0, 1, 0)), dst));
        assertEquals(ViperException.Reason.UNAVAILABLE, e.reason());
        ViperException outside = assertThrows(
                ViperException.class,
                () -> client.read(
                        staged.manifest(), server.location(), List.of(new ByteRange(0, dst.byteSize() + 1, 0)), dst));
        assertEquals(ViperException.Reason.CONFIG, outside.reason());
        ViperException badUri = assertThrows(
                ViperException.class,
                () -> client.read(
                        staged.manifest(),
                        new Location(URI.create("tcp://127.0.0.1"), Tier.HOST),
                        List.of(new ByteRange(0, 1, 0)),
                        dst));
        assertEquals(ViperException.Reason.CONFIG, badUri.reason());
        assertThrows(
                ViperException.class,
                () -> provider.openServer(URI.create("tcp://127.0.0.1:0/path"), ViperConfig.defaults()));
        assertThrows(
                ViperException.class,
                () -> provider.openServer(
                        URI.create("tcp://127.0.0.1:0"), ViperConfig.of(Map.of("viper.transfer.timeout.ms", "x"))));
        client.close();
        ViperException closed = assertThrows(
                ViperException.class,
                () -> client.read(staged.manifest(), server.location(), List.of(new ByteRange(0, 1, 0)), dst));
        assertEquals(ViperException.Reason.CLOSED, closed.reason());
    }

    private void awaitNoOpenLeases() throws InterruptedException {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (staged.openLeases() != 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, staged.openLeases(), "the server released the leases of the closed connection");
    }
}
