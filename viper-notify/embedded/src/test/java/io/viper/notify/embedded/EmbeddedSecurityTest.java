package io.viper.notify.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider.Role;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import io.viper.testing.HostilePeers;
import io.viper.testing.TestCertificates;
import io.viper.testing.TestSecrets;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The broker's port with credentials, TLS and limits: a peer without the secret learns no model name; a consumer token
 * subscribes but cannot publish; TLS carries the manifests; idle subscribers stay (heartbeat) while silent raw peers
 * are closed; hostile peers are closed and good clients served.
 */
class EmbeddedSecurityTest {
    /** A process without a secret: not even this user's own (as another user of the machine). */
    private static final ViperConfig NO_SECRET = ViperConfig.of(Map.of("viper.auth.user.secret", "off"));

    private static final Map<String, String> SHORT_LIMITS = Map.of(
            "viper.limits.handshake.ms",
            "1000",
            "viper.limits.idle.ms",
            "1000",
            "viper.limits.connections.per.peer",
            "8",
            "viper.notify.timeout.ms",
            "5000");

    private final EmbeddedNotifierProvider provider = new EmbeddedNotifierProvider();
    private final List<AutoCloseable> open = new ArrayList<>();

    @TempDir
    Path dir;

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private <T extends AutoCloseable> T own(T c) {
        open.add(c);
        return c;
    }

    private static ViperConfig config(Map<String, String> a, Map<String, String> b) {
        Map<String, String> all = new HashMap<>(a);
        all.putAll(b);
        return ViperConfig.of(all);
    }

    private static Manifest manifest(String model, long version) {
        return new Manifest(
                model,
                version,
                "security-test",
                0,
                new LinkedHashMap<>(),
                List.of(new TensorEntry(
                        new TensorInfo("w", DType.F32, new long[] {2}, 0, 8), new ContentHash(version, 1))),
                List.of(new Location(URI.create("tcp://127.0.0.1:1"), Tier.HOST)));
    }

    private BlockingQueue<Manifest> subscribe(Notifier n, String model) {
        BlockingQueue<Manifest> q = new LinkedBlockingQueue<>();
        own(n.subscribe(model, q::add));
        return q;
    }

    private static Manifest next(BlockingQueue<Manifest> q) throws InterruptedException {
        Manifest m = q.poll(20, TimeUnit.SECONDS);
        assertNotNull(m, "no manifest within 20 s");
        return m;
    }

    @Test
    void withASecretAStrangerLearnsNothingAndAConsumerTokenCannotPublish() throws Exception {
        TestSecrets secrets = TestSecrets.make(dir);
        Notifier producer = own(provider.open(
                URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, ViperConfig.of(secrets.producerSetting())));
        producer.publish(manifest("secret-model", 1));
        Notifier consumer =
                own(provider.open(producer.uri(), Role.CONSUMER, ViperConfig.of(secrets.consumerSetting())));
        assertEquals(1, next(subscribe(consumer, "secret-model")).version());

        Notifier tokenAsProducer =
                own(provider.open(producer.uri(), Role.CONSUMER, ViperConfig.of(secrets.consumerSetting())));
        ViperConfigException forbidden =
                assertThrows(ViperConfigException.class, () -> tokenAsProducer.publish(manifest("secret-model", 99)));
        // refused before it leaves: a token cannot sign the manifest (the broker would refuse its role too)
        assertTrue(forbidden.getMessage().contains("a consumer token cannot publish"), forbidden.getMessage());
        ViperConfigException noRole = assertThrows(
                ViperConfigException.class,
                () -> provider.open(producer.uri(), Role.PRODUCER, ViperConfig.of(secrets.consumerSetting())));
        assertTrue(noRole.getMessage().contains("a consumer token cannot publish"), noRole.getMessage());

        Notifier stranger = own(provider.open(producer.uri(), Role.CONSUMER, NO_SECRET));
        BlockingQueue<Manifest> nothing = subscribe(stranger, "secret-model");
        ViperConfigException refused =
                assertThrows(ViperConfigException.class, () -> provider.open(producer.uri(), Role.PRODUCER, NO_SECRET));
        assertTrue(refused.getMessage().contains("requires credentials"), refused.getMessage());
        URI u = producer.uri();
        List<String> report = HostilePeers.strangerGetsOnlyTheChallenge(
                new HostilePeers.Target(u.getHost(), u.getPort(), "embedded", new byte[0], () -> {}, 64),
                RawClient.frame(0x02, RawClient.modelPayload("secret-model")));
        assertEquals(3, report.size());
        assertNull(nothing.poll(500, TimeUnit.MILLISECONDS), "a consumer without the secret never hears of the model");
        producer.publish(manifest("secret-model", 2));
        assertEquals(OptionalLong.of(2), producer.latestVersion("secret-model"), "the forged v99 was never accepted");
    }

    @Test
    void aConsumerTheBrokerRefusesStopsWithAConfigErrorRatherThanRetrying() throws Exception {
        // it logged "refused this client: authentication failed); retrying with backoff" for ever
        TestSecrets secrets = TestSecrets.make(dir);
        TestSecrets others = TestSecrets.make(Files.createDirectory(dir.resolve("others")));
        Notifier producer = own(provider.open(
                URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, ViperConfig.of(secrets.producerSetting())));
        producer.publish(manifest("refused", 1));
        for (Map<String, String> wrong : List.of(others.consumerSetting(), Map.of("viper.auth.user.secret", "off"))) {
            Notifier consumer = own(provider.open(producer.uri(), Role.CONSUMER, ViperConfig.of(wrong)));
            BlockingQueue<Object> heard = new LinkedBlockingQueue<>();
            Notifier.ManifestListener listener = collecting(heard);
            own(consumer.subscribe("refused", listener));
            Object first = heard.poll(20, TimeUnit.SECONDS);
            ViperConfigException refusal = assertInstanceOf(ViperConfigException.class, first, String.valueOf(first));
            assertTrue(refusal.getMessage().startsWith("notifier " + producer.uri() + ": "), refusal.getMessage());
            assertTrue(
                    refusal.getMessage()
                            .contains(
                                    wrong.containsKey("viper.auth.user.secret")
                                            ? "requires credentials"
                                            : "refused this client"),
                    refusal.getMessage());
            own(consumer.subscribe("refused", listener));
            assertInstanceOf(
                    ViperConfigException.class, heard.poll(20, TimeUnit.SECONDS), "a later subscription hears it too");
            assertThrows(
                    ViperConfigException.class,
                    () -> consumer.publish(manifest("refused", 2)),
                    "and a publish throws it");
            assertNull(heard.poll(200, TimeUnit.MILLISECONDS), "nothing more");
        }
    }

    /** A listener that adds what it hears, manifests and failures, to {@code heard}. */
    private static Notifier.ManifestListener collecting(BlockingQueue<Object> heard) {
        return new Notifier.ManifestListener() {
            @Override
            public void onManifest(Manifest manifest) {
                heard.add(manifest);
            }

            @Override
            public void onFailure(ViperException failure) {
                heard.add(failure);
            }
        };
    }

    /**
     * The message of the failure that a consumer of {@code broker} with {@code settings} hears first, which must be
     * one.
     */
    private String firstFailure(URI broker, Map<String, String> settings) throws InterruptedException {
        Notifier consumer = own(provider.open(broker, Role.CONSUMER, ViperConfig.of(settings)));
        BlockingQueue<Object> heard = new LinkedBlockingQueue<>();
        own(consumer.subscribe("m", collecting(heard)));
        Object first = heard.poll(20, TimeUnit.SECONDS);
        return assertInstanceOf(ViperConfigException.class, first, String.valueOf(first))
                .getMessage();
    }

    @Test
    void aConsumerWhoseTlsDoesNotMatchTheBrokersStopsRatherThanRetrying() throws Exception {
        // a certificate the consumer does not trust, or a broker without TLS, was retried for ever as a broker not up
        // yet is
        TestCertificates cert = TestCertificates.make(dir, "broker");
        TestCertificates stranger = TestCertificates.make(dir, "stranger");
        Map<String, String> serves = Map.of(
                "viper.tls.enabled",
                "true",
                "viper.tls.cert.file",
                cert.cert().toString(),
                "viper.tls.key.file",
                cert.key().toString(),
                "viper.tls.trust.file",
                cert.cert().toString());
        Map<String, String> trusts = Map.of(
                "viper.tls.enabled", "true", "viper.tls.trust.file", cert.cert().toString());
        URI tls = own(provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, ViperConfig.of(serves)))
                .uri();
        URI plain = own(provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, ViperConfig.defaults()))
                .uri();
        String at = "embedded://127.0.0.1:";
        // both certificates name localhost: the stranger's signature is what does not check
        assertEquals(
                "notifier " + tls + ": " + at + tls.getPort()
                        + " presents a TLS certificate this client refuses: PKIX path validation failed: "
                        + "signature check failed",
                firstFailure(
                        tls,
                        Map.of(
                                "viper.tls.enabled",
                                "true",
                                "viper.tls.trust.file",
                                stranger.cert().toString())));
        assertEquals(
                "notifier " + plain + ": " + at + plain.getPort()
                        + " answered without TLS, which viper.tls.enabled asks of it",
                firstFailure(plain, trusts));

        // a TLS broker that is not up yet is waited for, as any broker is
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        URI late = URI.create(at + port);
        Notifier early = own(provider.open(late, Role.CONSUMER, ViperConfig.of(trusts)));
        BlockingQueue<Object> heard = new LinkedBlockingQueue<>();
        own(early.subscribe("late", collecting(heard)));
        own(provider.open(late, Role.PRODUCER, ViperConfig.of(serves))).publish(manifest("late", 1));
        Object first = heard.poll(20, TimeUnit.SECONDS);
        assertEquals(
                1,
                assertInstanceOf(Manifest.class, first, String.valueOf(first)).version());
    }

    @Test
    void hostilePeersAreClosedWhileIdleSubscribersStay() throws Exception {
        Notifier producer =
                own(provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, ViperConfig.of(SHORT_LIMITS)));
        producer.publish(manifest("hostile", 1));
        Notifier follower = own(provider.open(producer.uri(), Role.CONSUMER, ViperConfig.of(SHORT_LIMITS)));
        BlockingQueue<Manifest> followed = subscribe(follower, "hostile");
        assertEquals(1, next(followed).version());
        URI u = producer.uri();
        long[] version = {1};
        List<String> report = HostilePeers.tryAll(new HostilePeers.Target(
                u.getHost(),
                u.getPort(),
                "embedded",
                new byte[0],
                () -> {
                    try {
                        producer.publish(manifest("hostile", ++version[0]));
                        Notifier late = own(provider.open(u, Role.CONSUMER, ViperConfig.of(SHORT_LIMITS)));
                        assertEquals(
                                version[0], next(subscribe(late, "hostile")).version());
                        late.close();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                },
                8));
        assertEquals(12, report.size(), report.toString());
        // The follower sat idle far longer than the broker's 1 s idle limit: its heartbeat kept it connected.
        Manifest last = null;
        for (Manifest m; (m = followed.poll(2, TimeUnit.SECONDS)) != null; ) {
            last = m;
        }
        assertNotNull(last);
        assertEquals(version[0], last.version(), "the idle follower heard every version");
    }

    @Test
    void tlsCarriesTheManifests() throws Exception {
        TestSecrets secrets = TestSecrets.make(dir);
        TestCertificates cert = TestCertificates.make(dir, "broker");
        Map<String, String> tls = Map.of(
                "viper.tls.enabled",
                "true",
                "viper.tls.cert.file",
                cert.cert().toString(),
                "viper.tls.key.file",
                cert.key().toString(),
                "viper.tls.trust.file",
                cert.cert().toString(),
                "viper.notify.timeout.ms",
                "5000",
                "viper.limits.handshake.ms",
                "1000");
        Notifier producer = own(provider.open(
                URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, config(tls, secrets.producerSetting())));
        producer.publish(manifest("over-tls", 3));
        Notifier consumer = own(provider.open(producer.uri(), Role.CONSUMER, config(tls, secrets.consumerSetting())));
        assertEquals(3, next(subscribe(consumer, "over-tls")).version());
        assertThrows(
                Exception.class,
                () -> provider.open(
                                producer.uri(),
                                Role.PRODUCER,
                                ViperConfig.of(Map.of(
                                        "viper.notify.timeout.ms",
                                        "3000",
                                        "viper.auth.secret.file",
                                        secrets.producer().toString())))
                        .close(),
                "a client without TLS gets nowhere with a TLS broker");
    }

    @Test
    void aBrokerBeyondLoopbackNeedsASecret() {
        ViperConfigException e = assertThrows(
                ViperConfigException.class,
                () -> EmbeddedBroker.start("0.0.0.0", 0).close());
        assertTrue(
                e.getMessage().startsWith("embedded server on 0.0.0.0: viper.auth.secret.file is not set"),
                e.getMessage());
    }
}
