package io.viper.notify.kafka;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** {@link KafkaNotifierITBase} against one in-process KRaft broker ({@link EmbeddedKafkaCluster}). */
class KafkaNotifierEmbeddedIT extends KafkaNotifierITBase {
    private static EmbeddedKafkaCluster kafka;

    @BeforeAll
    static void startCluster() {
        kafka = EmbeddedKafkaCluster.start(1);
    }

    @AfterAll
    static void stopCluster() {
        if (kafka != null) {
            kafka.close();
        }
    }

    @Override
    protected String bootstrapServers() {
        return kafka.bootstrapServers();
    }

    @Override
    protected void stopBroker() {
        kafka.stop();
    }

    @Override
    protected void startBroker() {
        kafka.start();
    }
}
