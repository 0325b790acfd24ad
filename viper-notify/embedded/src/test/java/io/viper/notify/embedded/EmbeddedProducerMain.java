package io.viper.notify.embedded;

import io.viper.ViperConfig;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * Child process of {@link EmbeddedTwoProcessIT}: a producer that hosts the broker on {@code embedded://127.0.0.1:0},
 * prints {@code URI <uri>}, then publishes version N of model {@code args[0]} for every line {@code N} it reads,
 * answering {@code OK N}.
 */
public final class EmbeddedProducerMain {
    private EmbeddedProducerMain() {}

    public static void main(String[] args) throws Exception {
        String model = args[0];
        try (Notifier producer = new EmbeddedNotifierProvider()
                .open(URI.create("embedded://127.0.0.1:0"), NotifierProvider.Role.PRODUCER, ViperConfig.defaults())) {
            System.out.println("URI " + producer.uri());
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                long v = Long.parseLong(line.trim());
                producer.publish(new Manifest(
                        model,
                        v,
                        "child",
                        Manifest.nowMicros(),
                        new LinkedHashMap<>(),
                        List.of(new TensorEntry(
                                new TensorInfo("w", DType.U8, new long[] {8}, 0, 8), new ContentHash(v, v))),
                        List.of(new Location(URI.create("tcp://127.0.0.1:9"), Tier.HOST))));
                System.out.println("OK " + v);
                System.out.flush();
            }
        }
    }
}
