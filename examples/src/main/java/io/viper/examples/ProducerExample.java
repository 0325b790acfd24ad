package io.viper.examples;

import io.viper.CheckpointPolicy;
import io.viper.Snapshot;
import io.viper.Viper;
import io.viper.ViperProducer;

/**
 * The smallest useful producer: trains a small network ({@link ExampleNet}) and lets Viper publish it every 100
 * iterations. It hosts the embedded notifier, so consumers connect to the address it prints.
 *
 * <p>Usage: {@code ProducerExample [NOTIFIER_URI [ITERATIONS [LINGER_S]]]} (defaults {@code embedded://127.0.0.1:7800},
 * 2000, 5): after training it keeps serving for LINGER_S seconds so that consumers can fetch the last version.
 */
public final class ProducerExample {
    private ProducerExample() {}

    /** Runs the example with the arguments above. */
    public static void main(String[] args) throws InterruptedException {
        String notifier = args.length > 0 ? args[0] : "embedded://127.0.0.1:7800";
        long iterations = args.length > 1 ? Long.parseLong(args[1]) : 2000;
        long lingerSeconds = args.length > 2 ? Long.parseLong(args[2]) : 5;
        ExampleNet net = new ExampleNet(42);
        try (Viper viper = Viper.builder().notifier(notifier).build();
                ViperProducer producer = viper.producer("digits", CheckpointPolicy.every(100))) {
            System.out.println("producer: notifier " + viper.notifierUri());
            int published = 0;
            // The snapshot is only described (and the parameters copied) when the policy publishes.
            Snapshot snapshot = sink ->
                    Snapshot.ofFloats(net.parameters(), ExampleNet.SHAPES).describe(sink);
            for (long it = 1; it <= iterations; it++) {
                double loss = net.step();
                if (producer.step(it, loss, snapshot).isPresent()) {
                    published++;
                }
            }
            producer.flush();
            System.out.println("producer: published " + published + " versions, the last v" + producer.latestVersion());
            Thread.sleep(lingerSeconds * 1000);
        }
    }
}
