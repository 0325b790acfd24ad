package io.viper.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ExampleNetTest {
    /** The share of {@code n} samples of this task that a network with {@code params} classifies right. */
    private static double accuracy(ExampleNet task, Map<String, float[]> params, int n) {
        SplittableRandom r = new SplittableRandom(3);
        int right = 0;
        for (int i = 0; i < n; i++) {
            int digit = i % ExampleNet.OUT;
            right += ExampleNet.predict(params, task.sample(digit, r)) == digit ? 1 : 0;
        }
        return (double) right / n;
    }

    @Test
    void trainingLowersTheLossAndLearnsTheTask() {
        ExampleNet net = new ExampleNet(42);
        double first = net.step();
        double last = first;
        for (int i = 0; i < 300; i++) {
            last = net.step();
        }
        assertTrue(last < first / 4, "loss " + first + " -> " + last);
        assertTrue(accuracy(net, net.parameters(), 1000) > 0.95, "accuracy " + accuracy(net, net.parameters(), 1000));
    }

    @Test
    void untrainedWeightsGuess() {
        ExampleNet net = new ExampleNet(42);
        assertTrue(accuracy(net, net.parameters(), 1000) < 0.5, "accuracy " + accuracy(net, net.parameters(), 1000));
    }

    @Test
    void predictReadsTheHiddenWidthFromTheTensors() {
        // a network of width 2 whose second hidden unit carries pixel 0 to digit 7
        float[] w1 = new float[2 * ExampleNet.IN];
        w1[ExampleNet.IN] = 1;
        float[] w2 = new float[ExampleNet.OUT * 2];
        w2[7 * 2 + 1] = 1;
        Map<String, float[]> params = Map.of(
                "dense1.weight",
                w1,
                "dense1.bias",
                new float[2],
                "dense2.weight",
                w2,
                "dense2.bias",
                new float[ExampleNet.OUT]);
        float[] x = new float[ExampleNet.IN];
        x[0] = 1;
        assertEquals(7, ExampleNet.predict(params, x));
        x[0] = 0;
        assertEquals(0, ExampleNet.predict(params, x)); // all logits equal: the first digit
    }

    @Test
    void tensorsHaveTheDemoNetworksNamesAndShapes() {
        ExampleNet net = new ExampleNet(1);
        assertEquals(
                List.of("dense1.weight", "dense1.bias", "dense2.weight", "dense2.bias"),
                List.copyOf(net.parameters().keySet()));
        assertEquals(
                List.copyOf(ExampleNet.SHAPES.keySet()),
                List.copyOf(net.parameters().keySet()));
        for (Map.Entry<String, float[]> e : net.parameters().entrySet()) {
            long elements = 1;
            for (long d : ExampleNet.SHAPES.get(e.getKey())) {
                elements *= d;
            }
            assertEquals(elements, e.getValue().length, e.getKey());
        }
        assertArrayEquals(new long[] {32, 64}, ExampleNet.SHAPES.get("dense1.weight"));
    }
}
