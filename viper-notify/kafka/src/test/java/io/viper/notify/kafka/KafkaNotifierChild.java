package io.viper.notify.kafka;

import io.viper.ViperConfig;
import io.viper.manifest.Manifest;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.util.Map;

/**
 * A child process of the Kafka notifier integration tests: opens {@code kafka://} through the provider as a producer or
 * a consumer and reports on stdout, one line per event.
 *
 * <pre>
 * consumer URI MODEL      prints READY once subscribed, then "MANIFEST model version locations..."
 *                         per manifest and "PROBLEM text" per problem; exits when stdin closes
 * producer URI MODEL N    publishes versions 1..N with a host location, then N again with the PFS
 *                         location added; prints "PUBLISHED version" after each acknowledgement; exits
 * </pre>
 */
public final class KafkaNotifierChild {
    private KafkaNotifierChild() {}

    /** Entry point; see the class comment. */
    public static void main(String[] args) throws IOException {
        EmbeddedKafkaCluster.quietLogs();
        URI uri = URI.create(args[1]);
        String model = args[2];
        ViperConfig config = ViperConfig.of(Map.of("viper.notify.timeout.ms", "20000"));
        switch (args[0]) {
            case "consumer" -> {
                try (Notifier n = new KafkaNotifierProvider().open(uri, NotifierProvider.Role.CONSUMER, config)) {
                    Notifier.Subscription s = n.subscribe(model, new Notifier.ManifestListener() {
                        @Override
                        public void onManifest(Manifest m) {
                            StringBuilder line = new StringBuilder("MANIFEST " + m.model() + " " + m.version());
                            m.locations().forEach(l -> line.append(' ').append(l.uri()));
                            System.out.println(line);
                        }

                        @Override
                        public void onProblem(String problem) {
                            System.out.println("PROBLEM " + problem.replace('\n', ' '));
                        }
                    });
                    System.out.println("READY");
                    InputStream in = System.in;
                    while (in.read() >= 0) {
                        // runs until the parent closes stdin
                    }
                    s.close();
                }
            }
            case "producer" -> {
                int n = Integer.parseInt(args[3]);
                try (Notifier p = new KafkaNotifierProvider().open(uri, NotifierProvider.Role.PRODUCER, config)) {
                    for (long v = 1; v <= n; v++) {
                        p.publish(TestManifests.manifest(model, v, "tcp://127.0.0.1:4" + v));
                        System.out.println("PUBLISHED " + v);
                    }
                    p.publish(TestManifests.manifest(model, n, "tcp://127.0.0.1:4" + n, TestManifests.pfs(model, n)));
                    System.out.println("PUBLISHED " + n);
                }
            }
            default -> throw new IllegalArgumentException("unknown role " + args[0] + " (consumer or producer)");
        }
        System.out.flush();
    }
}
