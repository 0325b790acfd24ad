package io.viper.testing;

import io.viper.auth.Secret;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;

/**
 * A producer secret and the consumer token derived from it, written as the files {@code viper.auth.secret.file} names
 * (mode 600), made fresh per test.
 *
 * @param producer the producer secret's file
 * @param consumer the consumer token's file
 */
public record TestSecrets(Path producer, Path consumer) {
    /** Writes a new pair into {@code dir}. */
    public static TestSecrets make(Path dir) throws IOException {
        String secret = Secret.generate();
        Path producer = write(dir.resolve("producer.secret"), secret);
        Path consumer = write(
                dir.resolve("consumer.token"), Secret.parse(secret, "test").consumerToken());
        return new TestSecrets(producer, consumer);
    }

    private static Path write(Path file, String text) throws IOException {
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        return Files.writeString(file, text + "\n");
    }

    /** The setting that gives the producer's secret. */
    public Map<String, String> producerSetting() {
        return Map.of("viper.auth.secret.file", producer.toString());
    }

    /** The setting that gives the consumer's token. */
    public Map<String, String> consumerSetting() {
        return Map.of("viper.auth.secret.file", consumer.toString());
    }
}
