package io.viper.notify.kafka;

import io.viper.testing.Ports;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.kafka.KafkaContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * {@link KafkaNotifierITBase} against a Kafka broker in a container (Testcontainers, image {@value #IMAGE}). Skipped,
 * with the reason in the report, where no Docker engine answers. The container's Kafka port is bound to a fixed host
 * port so that a stop and start of the container (the broker-restart tests) keeps the address the clients know.
 */
class KafkaNotifierContainerIT extends KafkaNotifierITBase {
    static final String IMAGE = "apache/kafka:4.1.1";
    private static KafkaContainer kafka;

    private static boolean docker;

    @BeforeAll
    static void startContainer() {
        EmbeddedKafkaCluster.quietLogs();
        try {
            docker = DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError e) {
            docker = false;
        }
        if (!docker) {
            return;
        }
        int port = Ports.free();
        kafka = new KafkaContainer(DockerImageName.parse(IMAGE)).withEnv("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "false");
        kafka.setPortBindings(List.of(port + ":9092"));
        kafka.start();
    }

    /** Skips each test, with the reason, where no Docker engine answers. */
    @BeforeEach
    void requireDocker() {
        Assumptions.assumeTrue(
                docker,
                "no Docker engine is reachable from this machine, so the Testcontainers variant of the"
                        + " Kafka notifier tests is skipped; KafkaNotifierEmbeddedIT runs the same tests on an"
                        + " in-process KRaft broker");
    }

    @AfterAll
    static void stopContainer() {
        if (kafka != null) {
            kafka.stop();
        }
    }

    @Override
    protected String bootstrapServers() {
        return kafka.getBootstrapServers();
    }

    @Override
    protected void stopBroker() {
        kafka.getDockerClient()
                .stopContainerCmd(kafka.getContainerId())
                .withTimeout(20)
                .exec();
    }

    @Override
    protected void startBroker() throws Exception {
        kafka.getDockerClient().startContainerCmd(kafka.getContainerId()).exec();
        Properties p = new Properties();
        p.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        try (Admin admin = Admin.create(p)) {
            while (true) {
                try {
                    admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
                    return;
                } catch (ExecutionException | TimeoutException e) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException(
                                "the Kafka container did not answer within 90 s after its restart", e);
                    }
                    Thread.sleep(500);
                }
            }
        }
    }
}
