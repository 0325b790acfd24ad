package io.viper.demo.digits;

import java.util.Objects;

/**
 * The training loop of the demo's producer: each {@link #step()} takes the mini-batch of the
 * {@link ContinualDigitsStream} at the current iteration and applies one optimizer update to the {@link Mlp}. With the
 * same stream config, model config and batch size, two trainers produce the same losses and parameters, bit for bit.
 *
 * <p>Threading: not thread-safe; one thread owns a trainer and its model. Between steps that thread may take
 * {@link Mlp#parameters()} or {@link #snapshot()} and hand them to other threads.
 */
public final class Trainer {
    /** Default mini-batch size. */
    public static final int DEFAULT_BATCH_SIZE = 32;

    private final ContinualDigitsStream stream;
    private final Mlp model;
    private final ContinualDigitsStream.Batch batch;
    private long iteration;
    private double lastLoss = Double.NaN;

    /**
     * A trainer that starts at iteration 0.
     *
     * @param batchSize images per step, 1..4096
     */
    public Trainer(ContinualDigitsStream stream, Mlp model, int batchSize) {
        this.stream = Objects.requireNonNull(stream, "stream");
        this.model = Objects.requireNonNull(model, "model");
        if (batchSize < 1 || batchSize > 4096) {
            throw new IllegalArgumentException("batchSize " + batchSize + ", expected 1..4096");
        }
        this.batch = new ContinualDigitsStream.Batch(
                new float[batchSize * DigitsDataset.PIXELS], new int[batchSize], batchSize);
    }

    /**
     * The demo workload with defaults: {@link StreamConfig#defaults}, {@link Mlp.Config#defaults}, batches of
     * {@value #DEFAULT_BATCH_SIZE}; stream and weights seeded by {@code seed}.
     */
    public static Trainer defaults(long horizon, long seed) {
        return new Trainer(
                new ContinualDigitsStream(StreamConfig.defaults(horizon, seed)),
                new Mlp(Mlp.Config.defaults(seed)),
                DEFAULT_BATCH_SIZE);
    }

    /**
     * Runs one training iteration on the batch at position {@link #iteration()}, then advances the iteration by one.
     *
     * @return the mean cross-entropy of that batch, measured before the update
     */
    public double step() {
        stream.fillTrainingBatch(iteration, batch);
        lastLoss = model.trainBatch(batch.x(), batch.labels(), batch.size());
        iteration++;
        return lastLoss;
    }

    /** Number of iterations completed: 0 before the first {@link #step()}. */
    public long iteration() {
        return iteration;
    }

    /** Loss returned by the last {@link #step()}, NaN before the first. */
    public double lastLoss() {
        return lastLoss;
    }

    /** Images per step. */
    public int batchSize() {
        return batch.size();
    }

    /** The model being trained (owned by this trainer's thread). */
    public Mlp model() {
        return model;
    }

    /** The stream. */
    public ContinualDigitsStream stream() {
        return stream;
    }

    /** A read-only copy of the model as it is now; safe to hand to other threads. */
    public InferenceModel snapshot() {
        return model.snapshot();
    }
}
