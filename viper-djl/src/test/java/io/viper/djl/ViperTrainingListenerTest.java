package io.viper.djl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.ParameterStore;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.dataset.Batch;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import io.viper.CheckpointPolicy;
import io.viper.ModelLease;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.ViperProducer;
import io.viper.demo.digits.DigitsDataset;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperFormatException;
import io.viper.errors.ViperNotFoundException;
import io.viper.tensor.Checkpoint;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * DJL with its PyTorch engine (natives from the Maven Central jars, nothing downloaded): a network trained on the
 * digits with {@link ViperTrainingListener} publishes per the policy, with the batch losses; a consumer loads a leased
 * version into a fresh block with {@link BlockParameters}, which then holds the same bytes and predicts the same.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ViperTrainingListenerTest {
    private static final int BATCH = 64;

    private static SequentialBlock mlp() {
        return new SequentialBlock()
                .add(Linear.builder().setUnits(32).build())
                .add(Activation::relu)
                .add(Linear.builder().setUnits(10).build());
    }

    private static Viper viper() {
        return Viper.builder()
                .notifier("embedded://127.0.0.1:0")
                .transports("tcp://127.0.0.1:0")
                .build();
    }

    private static ArrayDataset digits(NDManager manager) {
        DigitsDataset d = DigitsDataset.load();
        float[] x = new float[d.size() * DigitsDataset.PIXELS];
        float[] y = new float[d.size()];
        for (int i = 0; i < d.size(); i++) {
            float[] image = d.image(i);
            for (int p = 0; p < image.length; p++) {
                x[i * DigitsDataset.PIXELS + p] = image[p] / DigitsDataset.MAX_PIXEL;
            }
            y[i] = d.label(i);
        }
        return new ArrayDataset.Builder()
                .setData(manager.create(x, new Shape(d.size(), DigitsDataset.PIXELS)))
                .optLabels(manager.create(y, new Shape(d.size())))
                .setSampling(BATCH, true)
                .build();
    }

    private static Model model(String name, Block block) {
        Model m = Model.newInstance(name, "PyTorch");
        m.setBlock(block);
        return m;
    }

    @Test
    void thePyTorchEngineLoadsFromTheJarsOnTheClassPath() {
        Engine engine = Engine.getEngine("PyTorch");
        assertEquals("PyTorch", engine.getEngineName());
        assertEquals("2.5.1", engine.getVersion());
    }

    @Test
    void trainingPublishesPerThePolicyAndALeasedVersionLoadsIntoAFreshBlockExactly() throws Exception {
        try (Viper viper = viper();
                ViperProducer producer = viper.producer("mlp", CheckpointPolicy.every(10));
                ViperConsumer consumer = viper.consumer("mlp");
                Model trained = model("mlp", mlp());
                Model served = model("served", mlp())) {
            Map<Long, Double> losses = new ConcurrentSkipListMap<>();
            consumer.onManifest(m -> {
                String loss = m.metadata().get(Checkpoint.META_LOSS); // explicit publishes carry none
                if (loss != null) {
                    losses.put(m.version(), Double.parseDouble(loss));
                }
            });
            ViperTrainingListener listener = new ViperTrainingListener(producer);
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.adam()
                            .optLearningRateTracker(Tracker.fixed(0.01f))
                            .build())
                    .addTrainingListeners(listener);
            int batchesPerEpoch = (DigitsDataset.load().size() + BATCH - 1) / BATCH;
            try (Trainer trainer = trained.newTrainer(config)) {
                trainer.initialize(new Shape(1, DigitsDataset.PIXELS));
                EasyTrain.fit(trainer, 2, digits(trained.getNDManager()), null);
            }
            long iterations = listener.iteration();
            assertEquals(2L * batchesPerEpoch, iterations, "one iteration per training batch, across epochs");
            // every(10) published iterations 10, 20, ...; the end of training the final parameters, unless the last did
            long versions = iterations / 10 + (iterations % 10 == 0 ? 0 : 1);
            assertEquals(versions, listener.lastPublished().orElseThrow().version());

            consumer.awaitVersion(versions, Duration.ofSeconds(60));
            // The batch losses reported with the versions: those of a network that learns.
            assertEquals(versions, losses.size(), losses.toString());
            assertTrue(losses.values().stream().allMatch(l -> l > 0 && l < 3), losses.toString());
            assertTrue(losses.get(versions) < losses.get(1L), "the loss fell from v1 to v" + versions + ": " + losses);

            // The version served last holds the trained parameters, bit for bit, without a call of the user's.
            served.getBlock().initialize(served.getNDManager(), DataType.FLOAT32, new Shape(1, DigitsDataset.PIXELS));
            try (ModelLease lease = consumer.current()) {
                assertEquals(versions, lease.version());
                assertEquals(
                        Long.toString(iterations), lease.manifest().metadata().get(Checkpoint.META_ITERATION));
                BlockParameters.load(lease, served);
            }
            List<Pair<String, Parameter>> a =
                    trained.getBlock().getParameters().stream().toList();
            List<Pair<String, Parameter>> b =
                    served.getBlock().getParameters().stream().toList();
            assertEquals(a.size(), b.size());
            for (int i = 0; i < a.size(); i++) {
                assertEquals(a.get(i).getKey(), b.get(i).getKey());
                assertArrayEquals(
                        bytes(a.get(i).getValue().getArray()),
                        bytes(b.get(i).getValue().getArray()),
                        a.get(i).getKey());
            }
            try (NDManager m = NDManager.newBaseManager("PyTorch")) {
                NDArray x = m.randomUniform(0, 1, new Shape(5, DigitsDataset.PIXELS));
                NDArray want = trained.getBlock()
                        .forward(new ParameterStore(m, false), new NDList(x), false)
                        .singletonOrThrow();
                NDArray got = served.getBlock()
                        .forward(new ParameterStore(m, false), new NDList(x), false)
                        .singletonOrThrow();
                assertArrayEquals(bytes(want), bytes(got), "the loaded block predicts exactly as the trained one");
            }
        }
    }

    /**
     * DJL calls the listener before {@code trainer.step()}: each version must hold the parameters after its iteration's
     * update, and the last the final ones. A loop of the user's own (no {@code onEpoch}) records the parameters after
     * each update; every version the consumer swapped in is compared.
     */
    @Test
    void eachVersionHoldsTheParametersAfterItsUpdateAndTheLastTheFinalOnes() throws Exception {
        try (Viper viper = viper();
                ViperProducer producer = viper.producer("steps", CheckpointPolicy.every(5));
                ViperConsumer consumer = viper.consumer("steps");
                Model trained = model("steps", mlp())) {
            ConcurrentSkipListMap<Long, byte[]> served = new ConcurrentSkipListMap<>(); // by iteration
            List<byte[]> afterUpdate = new ArrayList<>(); // [i]: after iteration i + 1's update
            ViperTrainingListener listener = new ViperTrainingListener(producer);
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.adam()
                            .optLearningRateTracker(Tracker.fixed(0.01f))
                            .build())
                    .addTrainingListeners(listener);
            try (Trainer trainer = trained.newTrainer(config)) {
                trainer.initialize(new Shape(1, DigitsDataset.PIXELS));
                List<String> names = trained.getBlock().getParameters().keys();
                consumer.onUpdate(u -> {
                    try (ModelLease lease = consumer.current()) {
                        long iteration =
                                Long.parseLong(lease.manifest().metadata().get(Checkpoint.META_ITERATION));
                        served.put(iteration, leased(lease, names));
                    }
                });
                for (Batch batch : trainer.iterateDataset(digits(trained.getNDManager()))) {
                    EasyTrain.trainBatch(trainer, batch);
                    trainer.step();
                    batch.close();
                    afterUpdate.add(parameters(trained.getBlock()));
                }
            }
            long iterations = listener.iteration();
            assertEquals(afterUpdate.size(), iterations);
            assertTrue(iterations % 5 != 0, "the last iteration is not one every(5) publishes: " + iterations);
            long last = listener.lastPublished().orElseThrow().version();
            assertEquals(iterations / 5 + 1, last, "iterations 5, 10, ..., then the final parameters");
            consumer.awaitVersion(last, Duration.ofSeconds(60));
            assertEquals(iterations, served.lastKey(), served.keySet().toString());
            assertArrayEquals(parameters(trained.getBlock()), served.get(iterations), "the final parameters serve");
            for (Map.Entry<Long, byte[]> e : served.entrySet()) {
                assertArrayEquals(
                        afterUpdate.get((int) (e.getKey() - 1)),
                        e.getValue(),
                        "iteration " + e.getKey() + " of " + served.keySet());
            }
        }
    }

    /** The block's parameters' bytes, one after the other in the block's order. */
    private static byte[] parameters(Block block) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Pair<String, Parameter> p : block.getParameters()) {
            out.writeBytes(bytes(p.getValue().getArray()));
        }
        return out.toByteArray();
    }

    /** The leased tensors' bytes, one after the other in the order of {@code names}. */
    private static byte[] leased(ModelLease lease, List<String> names) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (String name : names) {
            out.writeBytes(lease.tensor(name).data().toArray(ValueLayout.JAVA_BYTE));
        }
        return out.toByteArray();
    }

    @Test
    void loadingRefusesATensorMissingOrOfAnotherShapeAndABlockNotInitialized() throws Exception {
        try (Viper viper = viper();
                ViperProducer producer = viper.producer("other", CheckpointPolicy.never());
                ViperConsumer consumer = viper.consumer("other");
                Model small = model(
                        "small",
                        new SequentialBlock().add(Linear.builder().setUnits(3).build()));
                Model wide = model(
                        "wide",
                        new SequentialBlock().add(Linear.builder().setUnits(4).build()));
                Model deeper = model(
                        "deeper",
                        new SequentialBlock()
                                .add(Linear.builder().setUnits(3).build())
                                .add(Linear.builder().setUnits(5).build()))) {
            small.getBlock().initialize(small.getNDManager(), DataType.FLOAT32, new Shape(1, 2));
            wide.getBlock().initialize(wide.getNDManager(), DataType.FLOAT32, new Shape(1, 2));
            producer.publish(BlockParameters.snapshot(small.getBlock()), Map.of());
            consumer.awaitVersion(1, Duration.ofSeconds(60));
            try (ModelLease lease = consumer.current()) {
                ViperFormatException shape =
                        assertThrows(ViperFormatException.class, () -> BlockParameters.load(lease, wide));
                assertTrue(
                        shape.getMessage()
                                .startsWith("other v1: tensor 01Linear_weight is F32[3, 2] but the block's parameter is"
                                        + " F32[4, 2]"),
                        shape.getMessage());
                ViperConfigException uninitialized =
                        assertThrows(ViperConfigException.class, () -> BlockParameters.load(lease, deeper));
                assertTrue(
                        uninitialized.getMessage().startsWith("the block is not initialized"),
                        uninitialized.getMessage());
                deeper.getBlock().initialize(deeper.getNDManager(), DataType.FLOAT32, new Shape(1, 2));
                ViperNotFoundException missing =
                        assertThrows(ViperNotFoundException.class, () -> BlockParameters.load(lease, deeper));
                assertTrue(missing.getMessage().contains("02Linear_weight"), missing.getMessage());
            }
        }
    }

    private static byte[] bytes(NDArray a) {
        ByteBuffer b = a.toByteBuffer();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }
}
