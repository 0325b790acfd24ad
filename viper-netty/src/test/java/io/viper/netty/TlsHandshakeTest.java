package io.viper.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.viper.ViperConfig;
import io.viper.auth.Role;
import io.viper.errors.ViperConfigException;
import io.viper.testing.TestCertificates;
import io.viper.testing.TestSecrets;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ServerSecurity#install} and {@link ClientSecurity#install} on real loopback connections: TLS and the handshake
 * together, and what a client sees when the two sides disagree about TLS or about the certificate. Each test's server
 * and client run on event loops of their own.
 */
class TlsHandshakeTest {
    @TempDir
    Path dir;

    private TestSecrets secrets;
    private TestCertificates cert;
    private final List<ServerLoops> loops = new ArrayList<>();

    @BeforeEach
    void makeFiles() throws Exception {
        secrets = TestSecrets.make(dir);
        cert = TestCertificates.make(dir, "server");
    }

    @AfterEach
    void stop() {
        loops.forEach(ServerLoops::close);
    }

    private Map<String, String> settings(boolean tls, String... more) {
        Map<String, String> all = new HashMap<>(secrets.producerSetting());
        if (tls) {
            all.put("viper.tls.enabled", "true");
            all.put("viper.tls.cert.file", cert.cert().toString());
            all.put("viper.tls.key.file", cert.key().toString());
            all.put("viper.tls.trust.file", cert.cert().toString());
        }
        for (int i = 0; i < more.length; i += 2) {
            all.put(more[i], more[i + 1]);
        }
        return all;
    }

    /** A server that installs its security and then nothing; returns its port. */
    private int server(Map<String, String> settings) {
        InetSocketAddress bind = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        ServerSecurity security = ServerSecurity.forServer(ViperConfig.of(settings), "tcp", bind);
        ServerLoops l = new ServerLoops("tls-test-server", 1);
        loops.add(l);
        Channel server = new ServerBootstrap()
                .group(l.group())
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        l.add(ch);
                        security.install(ch);
                    }
                })
                .bind(bind)
                .syncUninterruptibly()
                .channel();
        l.add(server);
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    /**
     * Connects a client with {@code settings}; the future completes with {@link ClientSecurity#AUTHENTICATED}, or
     * exceptionally with what reached the protocol handler, or with "closed" when the server hung up first.
     */
    private CompletableFuture<Object> connect(Map<String, String> settings, int port) {
        ClientSecurity security = ClientSecurity.of(ViperConfig.of(settings), "tcp", Role.PRODUCER);
        ServerLoops l = new ServerLoops("tls-test-client", 1);
        loops.add(l);
        CompletableFuture<Object> outcome = new CompletableFuture<>();
        Bootstrap b = new Bootstrap().group(l.group()).channel(NioSocketChannel.class);
        Channel ch = b.handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        security.install(ch, "127.0.0.1", port);
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                                if (evt == ClientSecurity.AUTHENTICATED) {
                                    outcome.complete(evt);
                                }
                            }

                            @Override
                            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                outcome.completeExceptionally(cause);
                                ctx.close();
                            }

                            @Override
                            public void channelInactive(ChannelHandlerContext ctx) {
                                outcome.complete("closed");
                            }
                        });
                    }
                })
                .connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port))
                .syncUninterruptibly()
                .channel();
        l.add(ch);
        return outcome;
    }

    private static Throwable failure(CompletableFuture<Object> outcome) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> outcome.get(20, TimeUnit.SECONDS));
        return e.getCause();
    }

    @Test
    void tlsOnBothSidesCarriesTheHandshake() throws Exception {
        int port = server(settings(true));
        assertEquals(ClientSecurity.AUTHENTICATED, connect(settings(true), port).get(20, TimeUnit.SECONDS));
    }

    @Test
    void aTlsClientOfAPlainServerFailsSayingSo() {
        Throwable t = failure(connect(settings(true), server(settings(false))));
        assertInstanceOf(ClientSecurity.HandshakeFailed.class, t);
        assertTrue(t.getMessage().contains("answered without TLS"), t.getMessage());
    }

    @Test
    void aPlainClientOfATlsServerIsClosedAtTheHandshakeDeadline() throws Exception {
        int port = server(settings(true, "viper.limits.handshake.ms", "300"));
        long t0 = System.nanoTime();
        CompletableFuture<Object> outcome = connect(settings(false), port);
        // Neither side speaks first: the server waits for a TLS hello, the client for a challenge,
        // until the server's deadline closes the connection (its TLS alert reads as "no handshake").
        Object closed =
                outcome.handle((ok, failed) -> failed != null ? failed : ok).get(20, TimeUnit.SECONDS);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        if (closed instanceof Throwable t) {
            assertInstanceOf(ClientSecurity.HandshakeFailed.class, t);
            assertTrue(t.getMessage().contains("no handshake"), t.getMessage());
        } else {
            assertEquals("closed", closed, "never authenticated");
        }
        assertTrue(ms >= 250, "closed by the deadline of 300 ms, not before: " + ms + " ms");
    }

    @Test
    void aClientThatDoesNotTrustTheCertificateFailsSayingSo() throws Exception {
        TestCertificates other = TestCertificates.make(Files.createDirectory(dir.resolve("other")), "other");
        Map<String, String> client =
                settings(true, "viper.tls.trust.file", other.cert().toString());
        Throwable t = failure(connect(client, server(settings(true))));
        assertInstanceOf(ClientSecurity.HandshakeFailed.class, t);
        assertTrue(t.getMessage().contains("presents a TLS certificate this client refuses"), t.getMessage());
    }

    @Test
    void tlsWithoutItsFilesDoesNotStart() {
        ViperConfigException noCert =
                assertThrows(ViperConfigException.class, () -> server(Map.of("viper.tls.enabled", "true")));
        assertTrue(noCert.getMessage().contains("viper.tls.cert.file"), noCert.getMessage());
        Map<String, String> noKey = new HashMap<>(settings(true));
        noKey.remove("viper.tls.key.file");
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> server(noKey));
        assertTrue(e.getMessage().contains("viper.tls.key.file"), e.getMessage());
    }
}
