package io.viper.notify.kafka;

import io.viper.testing.Ports;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;

/**
 * A KRaft Kafka cluster inside the test JVM: {@code nodes} combined broker+controller nodes on free loopback ports, log
 * directories under a temporary directory, a small footprint (few threads, a small cleaner buffer), each with a
 * PLAINTEXT listener and a SASL_PLAINTEXT one (mechanism PLAIN). {@link #stop()} and {@link #start()} restart every
 * node on the same ports with the same data, as a broker restart does. Topic auto-creation is off, so that tests see
 * what the notifier creates.
 *
 * <p>Usage: {@code try (var kafka = EmbeddedKafkaCluster.start(1)) { kafka.bootstrapServers(); }}
 */
public final class EmbeddedKafkaCluster implements AutoCloseable {
    /** The user the SASL/PLAIN listener accepts. */
    public static final String SASL_USER = "viper";
    /** The password of {@link #SASL_USER}. */
    public static final String SASL_PASSWORD = "viper-secret";

    /** Strong references, so that the levels set on these loggers stay. */
    private static final List<Logger> QUIET = new ArrayList<>();

    static {
        quietLogs();
    }

    private final Path dir;
    private final boolean ownsDir;
    private final List<Properties> configs = new ArrayList<>();
    private final int[] brokerPorts;
    private final int[] saslPorts;
    private final KafkaRaftServer[] servers;

    private EmbeddedKafkaCluster(int nodes, Path dir, boolean ownsDir) {
        this.dir = dir;
        this.ownsDir = ownsDir;
        this.brokerPorts = new int[nodes];
        this.saslPorts = new int[nodes];
        this.servers = new KafkaRaftServer[nodes];
        int[] controllerPorts = new int[nodes];
        for (int i = 0; i < nodes; i++) {
            brokerPorts[i] = Ports.free();
            saslPorts[i] = Ports.free();
            controllerPorts[i] = Ports.free();
        }
        StringBuilder voters = new StringBuilder();
        for (int i = 0; i < nodes; i++) {
            voters.append(i == 0 ? "" : ",").append(i + 1).append("@127.0.0.1:").append(controllerPorts[i]);
        }
        int rf = Math.min(3, nodes);
        for (int i = 0; i < nodes; i++) {
            Properties p = new Properties();
            p.setProperty("process.roles", "broker,controller");
            p.setProperty("node.id", Integer.toString(i + 1));
            p.setProperty("controller.quorum.voters", voters.toString());
            p.setProperty(
                    "listeners",
                    "PLAINTEXT://127.0.0.1:" + brokerPorts[i] + ",SASL://127.0.0.1:" + saslPorts[i]
                            + ",CONTROLLER://127.0.0.1:" + controllerPorts[i]);
            p.setProperty(
                    "advertised.listeners",
                    "PLAINTEXT://127.0.0.1:" + brokerPorts[i] + ",SASL://127.0.0.1:" + saslPorts[i]);
            p.setProperty(
                    "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT");
            p.setProperty("sasl.enabled.mechanisms", "PLAIN");
            p.setProperty(
                    "listener.name.sasl.plain.sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required user_" + SASL_USER + "=\""
                            + SASL_PASSWORD + "\";");
            p.setProperty("controller.listener.names", "CONTROLLER");
            p.setProperty("inter.broker.listener.name", "PLAINTEXT");
            p.setProperty("log.dirs", dir.resolve("node-" + (i + 1)).toString());
            p.setProperty("auto.create.topics.enable", "false");
            p.setProperty("num.partitions", "1");
            p.setProperty("offsets.topic.replication.factor", Integer.toString(rf));
            p.setProperty("transaction.state.log.replication.factor", Integer.toString(rf));
            p.setProperty("transaction.state.log.min.isr", "1");
            p.setProperty("share.coordinator.state.topic.replication.factor", Integer.toString(rf));
            p.setProperty("share.coordinator.state.topic.min.isr", "1");
            p.setProperty("group.initial.rebalance.delay.ms", "0");
            p.setProperty("num.network.threads", "2");
            p.setProperty("num.io.threads", "2");
            p.setProperty("num.recovery.threads.per.data.dir", "1");
            p.setProperty("background.threads", "2");
            p.setProperty("log.cleaner.threads", "1");
            p.setProperty("log.cleaner.dedupe.buffer.size", Integer.toString(4 * 1024 * 1024));
            p.setProperty("log.cleaner.backoff.ms", "1000");
            p.setProperty("controlled.shutdown.enable", "true");
            configs.add(p);
        }
    }

    /** Starts a cluster of {@code nodes} nodes (1 to 3 are sensible) in a new temporary directory. */
    public static EmbeddedKafkaCluster start(int nodes) {
        try {
            EmbeddedKafkaCluster c = new EmbeddedKafkaCluster(nodes, Files.createTempDirectory("viper-kafka-"), true);
            c.format();
            c.start();
            return c;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Sets Kafka's own loggers (slf4j routed to java.util.logging) to WARNING, and the client's connection warnings to
     * SEVERE.
     */
    public static void quietLogs() {
        synchronized (QUIET) {
            if (!QUIET.isEmpty()) {
                return;
            }
            for (String name : List.of(
                    "org.apache.kafka",
                    "kafka",
                    "state.change.logger",
                    "org.testcontainers",
                    "com.github.dockerjava",
                    "tc")) {
                Logger l = Logger.getLogger(name);
                l.setLevel(Level.WARNING);
                QUIET.add(l);
            }
            // one warning per reconnect attempt while a test has the broker stopped on purpose
            Logger network = Logger.getLogger("org.apache.kafka.clients.NetworkClient");
            network.setLevel(Level.SEVERE);
            QUIET.add(network);
        }
    }

    private void format() {
        String clusterId = Uuid.randomUuid().toString();
        for (int i = 0; i < configs.size(); i++) {
            Path file = dir.resolve("server-" + (i + 1) + ".properties");
            try (OutputStream out = Files.newOutputStream(file)) {
                configs.get(i).store(out, "viper test broker " + (i + 1));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            int rc = StorageTool.execute(
                    new String[] {"format", "-t", clusterId, "-c", file.toString()},
                    new PrintStream(buf, true, StandardCharsets.UTF_8));
            if (rc != 0) {
                throw new IllegalStateException(
                        "formatting Kafka storage failed (" + rc + "): " + buf.toString(StandardCharsets.UTF_8));
            }
        }
    }

    /** Starts every stopped node, on the ports and data of the first start, and waits until all are registered. */
    public synchronized void start() {
        for (int i = 0; i < servers.length; i++) {
            if (servers[i] == null) {
                KafkaRaftServer s = new KafkaRaftServer(KafkaConfig.fromProps(configs.get(i), false), Time.SYSTEM);
                s.startup();
                servers[i] = s;
            }
        }
        awaitBrokers(Duration.ofSeconds(60));
    }

    /** Stops every node (data and ports are kept for {@link #start()}). */
    public synchronized void stop() {
        for (int i = servers.length - 1; i >= 0; i--) {
            if (servers[i] != null) {
                servers[i].shutdown();
                servers[i].awaitShutdown();
                servers[i] = null;
            }
        }
    }

    /** Stops and starts every node. */
    public void restart() {
        stop();
        start();
    }

    /** Whether the nodes are running. */
    public synchronized boolean running() {
        return servers[0] != null;
    }

    /** The brokers as Kafka's {@code bootstrap.servers}. */
    public String bootstrapServers() {
        StringBuilder b = new StringBuilder();
        for (int port : brokerPorts) {
            b.append(b.isEmpty() ? "" : ",").append("127.0.0.1:").append(port);
        }
        return b.toString();
    }

    /**
     * The SASL_PLAINTEXT listeners (mechanism PLAIN, user {@value #SASL_USER}, password {@value #SASL_PASSWORD}) as
     * {@code bootstrap.servers}.
     */
    public String saslBootstrapServers() {
        StringBuilder b = new StringBuilder();
        for (int port : saslPorts) {
            b.append(b.isEmpty() ? "" : ",").append("127.0.0.1:").append(port);
        }
        return b.toString();
    }

    /** A {@code kafka://} URI of this cluster, with {@code topic}. */
    public URI uri(String topic) {
        return URI.create("kafka://" + bootstrapServers() + "?topic=" + topic);
    }

    private void awaitBrokers(Duration timeout) {
        Properties p = new Properties();
        p.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
        p.setProperty(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000");
        p.setProperty(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000");
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Admin admin = Admin.create(p)) {
            while (true) {
                try {
                    if (admin.describeCluster().nodes().get(5, TimeUnit.SECONDS).size() == servers.length) {
                        return;
                    }
                } catch (Exception e) {
                    if (e instanceof InterruptedException) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("interrupted while waiting for Kafka", e);
                    }
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(
                            "Kafka brokers " + bootstrapServers() + " did not all register within " + timeout);
                }
                Thread.sleep(100);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for Kafka", e);
        }
    }

    /** Stops the nodes and deletes the data. */
    @Override
    public void close() {
        stop();
        if (ownsDir) {
            try (Stream<Path> s = Files.walk(dir)) {
                s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            } catch (IOException e) {
                // temporary directory; left for the OS to clean
            }
        }
    }
}
