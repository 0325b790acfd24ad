package io.viper.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.training.Trainer;
import ai.djl.training.listener.TrainingListenerAdapter;
import io.viper.PublishHandle;
import io.viper.ViperProducer;
import io.viper.tensor.Checkpoint;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The Java twin of Viper's Keras callback: a DJL training listener that reports every training batch to a
 * {@link ViperProducer} as one iteration, with the batch's loss, so that the producer's checkpoint policy decides when
 * the model's parameters ({@link BlockParameters#snapshot}) are published. Iterations count training batches from 1,
 * across epochs.
 *
 * <p>DJL calls {@code onTrainingBatch} before {@code trainer.step()} updates the parameters, so a batch is reported to
 * the producer once its update is done: at the next batch (whose forward and backward passes leave the parameters
 * alone), at the end of its epoch, or at the end of training; a version of iteration {@code n} holds the parameters
 * after {@code n} updates. At the end of training (when the trainer closes) it publishes the final parameters, whatever
 * the policy, unless the last iteration's version holds them already, and flushes the producer, so that the last
 * version is announced.
 *
 * <pre>{@code
 * try (Viper viper = Viper.builder().build();
 *      ViperProducer producer = viper.producer("mlp", CheckpointPolicy.every(100))) {
 *     DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
 *             .addTrainingListeners(new ViperTrainingListener(producer));
 *     ...
 *     EasyTrain.fit(trainer, epochs, trainingSet, null);
 * }
 * }</pre>
 *
 * <p>DJL calls it on the training thread; the producer's copy into staging, when the policy publishes, is the only
 * stall it adds. The caller owns the producer (and closes it).
 */
public final class ViperTrainingListener extends TrainingListenerAdapter {
    private final ViperProducer producer;
    private long iteration;
    /** The loss of {@link #iteration}, not yet reported to the producer when {@link #pending}. */
    private double loss;

    private boolean pending;
    /** The iteration whose parameters the last version holds (0: none). */
    private long publishedIteration;

    private PublishHandle last;

    public ViperTrainingListener(ViperProducer producer) {
        this.producer = Objects.requireNonNull(producer, "producer");
    }

    @Override
    public void onTrainingBatch(Trainer trainer, BatchData batchData) {
        report(trainer); // the previous batch's update is done: the parameters are those after it
        iteration++;
        loss = batchLoss(trainer, batchData); // now: the batch's predictions are gone after this call
        pending = true;
    }

    @Override
    public void onEpoch(Trainer trainer) {
        report(trainer);
    }

    @Override
    public void onTrainingEnd(Trainer trainer) {
        report(trainer);
        if (iteration > publishedIteration) {
            last = producer.publish(
                    BlockParameters.snapshot(trainer.getModel().getBlock()),
                    Map.of(
                            Checkpoint.META_ITERATION,
                            Long.toString(iteration),
                            Checkpoint.META_LOSS,
                            Double.toString(loss)));
            publishedIteration = iteration;
        }
        producer.flush();
    }

    /** Reports the iteration waiting for its update, if any, to the producer. */
    private void report(Trainer trainer) {
        if (!pending) {
            return;
        }
        pending = false;
        producer.step(
                        iteration,
                        loss,
                        BlockParameters.snapshot(trainer.getModel().getBlock()))
                .ifPresent(h -> {
                    last = h;
                    publishedIteration = iteration;
                });
    }

    /** Training batches seen so far (the last iteration, reported to the producer once its update is done). */
    public long iteration() {
        return iteration;
    }

    /** The last version this listener published, if any. */
    public Optional<PublishHandle> lastPublished() {
        return Optional.ofNullable(last);
    }

    /** The trainer's loss on the batch: its mean over the devices the batch was split across. */
    static double batchLoss(Trainer trainer, BatchData batchData) {
        double sum = 0;
        int devices = 0;
        for (Map.Entry<Device, NDList> e : batchData.getLabels().entrySet()) {
            NDList predictions = batchData.getPredictions().get(e.getKey());
            try (NDArray loss = trainer.getLoss().evaluate(e.getValue(), predictions)) {
                sum += loss.toType(DataType.FLOAT64, false).getDouble();
            }
            devices++;
        }
        return devices == 0 ? Double.NaN : sum / devices;
    }
}
