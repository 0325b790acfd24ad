package io.viper.examples;

import io.viper.ModelLease;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.Tensor;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The smallest useful inference server: follows the {@code digits} model and answers requests with whatever version it
 * holds, one lease per request (about one a millisecond), until it serves a model trained to iteration {@code UNTIL} or
 * later (the {@code viper.iteration} the producer's {@code step} records). It serves any network with
 * {@link ExampleNet}'s tensor names, the one {@code examples/python/train_publish.py} trains included.
 *
 * <p>Usage: {@code ConsumerExample NOTIFIER_URI [UNTIL]} (the producer's address; default 2000).
 */
public final class ConsumerExample {
    private ConsumerExample() {}

    /** Runs the example with the arguments above. */
    public static void main(String[] args) throws InterruptedException {
        long until = args.length > 1 ? Long.parseLong(args[1]) : 2000;
        ExampleNet task = new ExampleNet(42); // only its requests: the producer's task
        SplittableRandom rng = new SplittableRandom(7);
        try (Viper viper = Viper.builder().notifier(args[0]).build();
                ViperConsumer consumer = viper.consumer("digits")) {
            consumer.onUpdate(
                    u -> System.out.printf("consumer: v%d via %s in %.1f ms%n", u.version(), u.path(), u.latencyMs()));
            consumer.awaitVersion(1, Duration.ofSeconds(60));
            long answered = 0;
            long iteration;
            do {
                try (ModelLease lease = consumer.current()) { // the model can't change under this request
                    Map<String, float[]> params = new LinkedHashMap<>();
                    for (Tensor t : lease.tensors()) {
                        params.put(t.name(), t.toFloatArray());
                    }
                    int digit = ExampleNet.predict(params, task.request(rng));
                    answered += digit >= 0 ? 1 : 0;
                    iteration =
                            Long.parseLong(lease.manifest().metadata().getOrDefault(Checkpoint.META_ITERATION, "0"));
                }
                Thread.sleep(1); // one request per millisecond
            } while (iteration < until);
            System.out.println("consumer: answered " + answered + " requests, now serving v" + consumer.version());
        }
    }
}
