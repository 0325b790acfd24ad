package io.viper.notify.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.manifest.Manifest;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A producer process hosts the broker; a consumer in this process subscribes, receives what the producer publishes,
 * hears of the producer's death, and picks up the next manifest from a broker started on the same port afterwards.
 */
class EmbeddedTwoProcessIT {
    @Test
    void consumerFollowsAProducerInAnotherProcess() throws Exception {
        String model = "twoproc";
        List<String> cmd = List.of(
                ProcessHandle.current()
                        .info()
                        .command()
                        .orElse(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java"),
                "-Xmx128m",
                "-cp",
                System.getProperty("java.class.path"),
                EmbeddedProducerMain.class.getName(),
                model);
        Process child = new ProcessBuilder(cmd)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        try {
            BufferedReader out =
                    new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            PrintStream in = new PrintStream(child.getOutputStream(), true, StandardCharsets.UTF_8);
            String line = out.readLine();
            assertNotNull(line, "the child printed its URI");
            URI uri = URI.create(line.substring("URI ".length()).trim());

            BlockingQueue<Manifest> manifests = new LinkedBlockingQueue<>();
            BlockingQueue<String> problems = new LinkedBlockingQueue<>();
            try (Notifier consumer = new EmbeddedNotifierProvider()
                            .open(uri, NotifierProvider.Role.CONSUMER, ViperConfig.defaults());
                    Notifier.Subscription sub = consumer.subscribe(model, new Notifier.ManifestListener() {
                        @Override
                        public void onManifest(Manifest m) {
                            manifests.add(m);
                        }

                        @Override
                        public void onProblem(String problem) {
                            problems.add(problem);
                        }
                    })) {
                for (long v = 1; v <= 3; v++) {
                    in.println(v);
                    assertEquals("OK " + v, out.readLine());
                }
                long last = 0;
                while (last < 3) {
                    Manifest m = manifests.poll(10, TimeUnit.SECONDS);
                    assertNotNull(m, "manifest from the child within 10 s");
                    assertTrue(m.version() > last);
                    last = m.version();
                }
                child.destroyForcibly();
                assertTrue(child.waitFor(10, TimeUnit.SECONDS));
                String p = problems.poll(10, TimeUnit.SECONDS);
                assertNotNull(p, "the consumer heard that the broker went away");
                assertTrue(p.contains(uri.toString()), p);

                try (EmbeddedBroker replacement = EmbeddedBroker.start(uri.getHost(), uri.getPort());
                        Notifier producer = new EmbeddedNotifierProvider()
                                .open(replacement.uri(), NotifierProvider.Role.PRODUCER, ViperConfig.defaults())) {
                    producer.publish(new Manifest(
                            model, 4, "parent", Manifest.nowMicros(), new LinkedHashMap<>(), List.of(), List.of()));
                    Manifest m = manifests.poll(10, TimeUnit.SECONDS);
                    assertNotNull(m, "the consumer reconnected to the new broker and got v4");
                    assertEquals(4, m.version());
                }
            }
        } finally {
            child.destroyForcibly();
            child.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
