package io.viper.transfer.cuda.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.auth.ClientAuth;
import io.viper.auth.Role;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.testing.RawPeer;
import io.viper.testing.TestStagedCheckpoint;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * The {@code cuda-pipe} control channel and stream on every build: a host-staged version read into host memory needs no
 * GPU on either side, so the framing, the status frames and the consumer's timeout are checked here; the GPU legs run
 * in the {@code *GpuTest}s.
 */
class PipeHostPathTest {
    private static final URI BIND = URI.create("cuda-pipe://127.0.0.1:0");
    /** What a consumer with the defaults holds: this user's own secret. */
    private static final ClientAuth NO_SECRET = ClientAuth.of(ViperConfig.defaults(), Role.CONSUMER);

    @Test
    void aHostStagedVersionStreamsTheRequestedRanges() {
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("pipe", 3, 11, 5000, 0, 70_000);
                PipeServer server = new PipeServer(BIND, ViperConfig.defaults());
                PipeClient client = new PipeClient(10_000, NO_SECRET);
                Arena arena = Arena.ofConfined()) {
            server.expose(staged);
            MemorySegment dst = arena.allocate(staged.manifest().totalBytes() + 10);
            List<ByteRange> ranges = List.of(new ByteRange(5000, 70_000, 10), new ByteRange(0, 5000, 70_010));
            client.read(staged.manifest(), server.location(), ranges, dst);
            assertEquals(-1, staged.data().asSlice(5000, 70_000).mismatch(dst.asSlice(10, 70_000)));
            assertEquals(-1, staged.data().asSlice(0, 5000).mismatch(dst.asSlice(70_010, 5000)));
            // The server sends its final OK, then closes the lease: wait (bounded) for the close.
            for (int i = 0; i < 500 && staged.openLeases() > 0; i++) {
                LockSupport.parkNanos(10_000_000);
            }
            assertEquals(0, staged.openLeases(), "the lease ends with the transfer");

            server.withdraw(staged);
            ViperNotFoundException gone = assertThrows(
                    ViperNotFoundException.class, () -> client.read(staged.manifest(), server.location(), ranges, dst));
            assertEquals(ViperException.Reason.NOT_FOUND, gone.reason());
        }
    }

    @Test
    void aProducerThatNeverAnswersFailsTheReadAfterTheTimeout() throws IOException {
        try (ServerSocketChannel silent =
                        ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                TestStagedCheckpoint staged = new TestStagedCheckpoint("pipe", 1, 1, 100);
                PipeClient client = new PipeClient(300, NO_SECRET);
                Arena arena = Arena.ofConfined()) {
            int port = ((InetSocketAddress) silent.getLocalAddress()).getPort();
            Location location = new Location(URI.create("cuda-pipe://127.0.0.1:" + port), Tier.GPU);
            Thread.ofVirtual().start(() -> {
                try (SocketChannel accepted = silent.accept()) {
                    DataInputStream in = new DataInputStream(accepted.socket().getInputStream());
                    RawPeer.acceptHandshake(
                            in, new DataOutputStream(accepted.socket().getOutputStream()), "cuda-pipe");
                    accepted.read(ByteBuffer.allocate(1 << 16)); // takes the request, answers nothing
                    Thread.sleep(10_000);
                } catch (IOException | InterruptedException | io.viper.auth.Handshake.Refused e) {
                    // the test is over
                }
            });
            RetriableViperException e = assertThrows(
                    RetriableViperException.class,
                    () -> client.read(
                            staged.manifest(), location, List.of(new ByteRange(0, 100, 0)), arena.allocate(100)));
            assertEquals(ViperException.Reason.TRANSFER, e.reason());
            assertTrue(e.getMessage().contains("no progress for 300 ms"), e.getMessage());
        }
    }
}
