package io.viper.notify.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.notify.kafka.internal.KafkaUri;
import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class KafkaUriTest {
    @Test
    void parsesBrokersAndTopic() {
        KafkaUri u = KafkaUri.parse(URI.create("kafka://a.example:9092,10.0.0.2:9093?topic=team.models"));
        assertEquals(List.of("a.example:9092", "10.0.0.2:9093"), u.brokers());
        assertEquals("team.models", u.topic());
        assertEquals("a.example:9092,10.0.0.2:9093", u.bootstrapServers());
        assertEquals(URI.create("kafka://a.example:9092,10.0.0.2:9093?topic=team.models"), u.toUri());
    }

    @Test
    void parsesAnIpv6Broker() {
        // java.net.URI takes an IPv6 literal only as the sole host of a URI
        assertEquals(
                List.of("[::1]:9094"),
                KafkaUri.parse(URI.create("kafka://[::1]:9094")).brokers());
    }

    @Test
    void defaultTopicAndCanonicalForm() {
        KafkaUri u = KafkaUri.parse(URI.create("KAFKA://kafka_1:9092/"));
        assertEquals("viper.models", u.topic());
        assertEquals("kafka://kafka_1:9092?topic=viper.models", u.toString());
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "embedded://h:1                     | is not a kafka URI",
                "kafka:h:1                          | must start with kafka://",
                "kafka:///                          | names no broker",
                "kafka://h                          | has no port",
                "kafka://h:0                        | invalid port '0'",
                "kafka://h:65536                    | invalid port '65536'",
                "kafka://h:x1                       | invalid port 'x1'",
                "kafka://h:1,,g:2                   | empty broker entry",
                "kafka://-h:1                       | invalid host name '-h'",
                "kafka://[::1]                      | has no port",
                "kafka://u:p@h:1                    | must not carry user info",
                "kafka://h:1/models                 | must not have a path",
                "kafka://h:1#frag                   | must not have a fragment",
                "kafka://h:1?topic=a&topic=b        | 'topic' is given twice",
                "kafka://h:1?partitions=3           | unknown query parameter 'partitions'",
                "kafka://h:1?topic=bad/name         | invalid topic name 'bad/name'",
                "kafka://h:1?topic=..               | invalid topic name '..'",
                "kafka://h:1?topic=                 | invalid topic name ''",
                "kafka://h:1?topic                  | malformed query parameter 'topic'",
            })
    void refusesWithAMessageNamingTheProblem(String uri, String expected) {
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> KafkaUri.parse(URI.create(uri)));
        assertTrue(
                e.getMessage().contains(expected),
                "message '" + e.getMessage() + "' should contain '" + expected + "'");
    }

    @Test
    void topicLongerThan249CharactersIsRefused() {
        String topic = "t".repeat(250);
        ViperConfigException e = assertThrows(
                ViperConfigException.class, () -> KafkaUri.parse(URI.create("kafka://h:1?topic=" + topic)));
        assertTrue(e.getMessage().contains("invalid topic name"), e.getMessage());
        assertEquals(
                topic.substring(1),
                KafkaUri.parse(URI.create("kafka://h:1?topic=" + topic.substring(1)))
                        .topic());
    }
}
