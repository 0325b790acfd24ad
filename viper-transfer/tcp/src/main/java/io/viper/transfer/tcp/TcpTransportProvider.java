package io.viper.transfer.tcp;

import io.viper.ViperConfig;
import io.viper.auth.ClientAuth;
import io.viper.auth.Role;
import io.viper.manifest.Tier;
import io.viper.net.Tls;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import io.viper.transfer.tcp.internal.TcpClient;
import io.viper.transfer.tcp.internal.TcpServer;
import java.net.URI;
import java.util.Optional;

/**
 * The {@code tcp://host:port} transport: host memory to host memory over TCP, the fallback when UCX is not available.
 * Always available; tier {@link Tier#HOST}, priority 10 (after UCX).
 *
 * <h2>Server</h2>
 *
 * {@link #openServer} binds a Netty server (NIO, daemon event-loop threads named {@code viper-tcp-server-*}) to
 * {@code tcp://host:port}; port 0 picks a free port and {@link TransportServer#location()} names the bound one (a
 * wildcard host is replaced by this host's address). The server serves the checkpoints the producer {@code expose}s,
 * straight from their staged memory: the bytes are written as zero-copy slices of the staged {@code MemorySegment} (8
 * MiB each), and a write-buffer water mark of one to two slices with the channel's writability keeps a slow consumer
 * from queueing more. The producer owns the server and closes it; closing fails open transfers on the consumer side.
 *
 * <h2>Client</h2>
 *
 * {@link #openClient} returns a thread-safe client that reads on the caller's thread with plain NIO directly into the
 * destination (see {@link TcpClient}), pooling connections per producer address. A producer that goes away mid-transfer
 * fails the read with a {@link io.viper.errors.RetriableViperException} at once when the connection resets or ends, and
 * after at most {@link io.viper.ViperConfig#TRANSFER_TIMEOUT_MS viper.transfer.timeout.ms} without progress otherwise;
 * a version the producer no longer serves fails with a {@link io.viper.errors.ViperNotFoundException}.
 *
 * <h2>Wire protocol, version 1</h2>
 *
 * Every message is a frame: a 4-byte big-endian length {@code N}, then {@code N} bytes: a version byte ({@code 1}), a
 * type byte and the payload. Strings are a 2-byte length and UTF-8 bytes; integers are big-endian.
 *
 * <pre>
 * client -> server
 *   LEASE    0x01  version:i64 model:str             take a read lease on model/version
 *   READ     0x02  leaseId:i64 n:i32 n*(offset:i64 length:i64)
 *                                                    stream these ranges of the leased data, in order
 *   RELEASE  0x03  leaseId:i64                       give the lease back
 *   TRACK    0x04  version:i64 model:str r:u8 r*(uri:str) f:u8 f*(uri:str)
 *                                                    where to read model/version from (the producer's tracker):
 *                                                    r: the reader's relay locations, f: relays that failed it
 * server -> client
 *   LEASED        0x11  leaseId:i64 dataBytes:i64    the lease is held until RELEASE or disconnect
 *   NOT_AVAILABLE 0x12  reason:str                   not served (withdrawn, recycled, unknown)
 *   DATA          0x13  total:i64                    followed by exactly {@code total} raw bytes (not framed):
 *                                                    the READ's ranges, concatenated in request order
 *   RELEASED      0x14  leaseId:i64                  the lease is closed
 *   SOURCES       0x15  n:u8 n*(uri:str)             read from this relay (n = 0: from this server)
 *   ERROR         0x1F  reason:str                   the request was malformed; the server closes
 * </pre>
 *
 * A server that streams a version a relaying consumer is still receiving sends each range as far as that consumer has
 * verified it and waits for the rest ({@link io.viper.spi.StagedCheckpoint#readable}); if that consumer's receive
 * fails, the server closes the connection and the reader reads the rest elsewhere.
 *
 * <p>Requests on one connection are handled strictly in order, so a client may pipeline a RELEASE behind its last READ:
 * the lease is closed only after the bytes were written. Lease id {@code 0} in a READ or RELEASE names the lease the
 * connection's last LEASE took; if that LEASE was answered NOT_AVAILABLE, READs and RELEASEs naming lease 0 are skipped
 * without an answer. So a read takes one round trip: the client sends LEASE, READ 0 and RELEASE 0 in one write and
 * receives LEASED, DATA and RELEASED, or only NOT_AVAILABLE. (Servers before lease 0 refuse it as an unknown lease.) A
 * client sends at most {@value io.viper.transfer.tcp.internal.TcpProtocol#MAX_RANGES_PER_READ} ranges per READ.
 *
 * <p>The server validates every frame: its length (at most
 * {@value io.viper.transfer.tcp.internal.TcpProtocol#MAX_REQUEST_FRAME} bytes), the version, the type, exact payload
 * sizes, model names, lease ids and that every range lies inside the staged data. A frame that fails closes that
 * connection (after an ERROR frame where possible) with one logged line; other connections are unaffected. When a
 * connection closes for any reason its leases are released, so a dead consumer never pins a staging buffer; a
 * connection that holds leases without sending a request, or stops reading a stream, for
 * {@code viper.transfer.timeout.ms} is closed.
 *
 * <p>Stateless and thread-safe; found through {@link java.util.ServiceLoader}.
 */
public final class TcpTransportProvider implements TransportProvider {
    /** Public no-argument constructor for {@link java.util.ServiceLoader}. */
    public TcpTransportProvider() {}

    @Override
    public String scheme() {
        return "tcp";
    }

    @Override
    public Tier tier() {
        return Tier.HOST;
    }

    @Override
    public int priority() {
        return 10;
    }

    @Override
    public Optional<String> unavailableReason() {
        return Optional.empty();
    }

    @Override
    public TransportServer openServer(URI bind, ViperConfig config) {
        return TcpServer.open(bind, config);
    }

    @Override
    public TransportClient openClient(ViperConfig config) {
        return new TcpClient(
                config.get(ViperConfig.TRANSFER_TIMEOUT_MS),
                ClientAuth.of(config, Role.CONSUMER),
                Tls.client(config).orElse(null));
    }
}
