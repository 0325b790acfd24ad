package io.viper.demo;

import io.viper.demo.digits.ContinualDigitsStream;
import io.viper.demo.digits.DigitClassifier;
import io.viper.demo.digits.InferenceModel;
import io.viper.scheduler.StalenessProbe;
import java.util.List;

/**
 * The demo producer's {@link StalenessProbe}: at iteration t it draws a validation batch where the stream is at t, from
 * the validation half of the held-out split (never trained on, and apart from the images requests are drawn from), and
 * scores on it the version the consumers hold and the model being trained. The training loop tells it which version it
 * deployed ({@link #deployed}). It also scores the model being trained on a fixed panel, the whole validation half, the
 * same images at every iteration ({@link ContinualDigitsStream#evaluateValidation}), weighted as the requests draw
 * them, where the stream is now: the online policy follows on it a version's own standing against its neighbours in
 * training. It reads no image of the request half. Owned by the training thread.
 */
final class ValidationProbe implements StalenessProbe {
    /** Images per validation batch. */
    static final int BATCH = 64;

    private static final long SALT = 0x5EEDL;

    private final ContinualDigitsStream stream;
    private final DigitClassifier current;
    private final long seed;
    private DigitClassifier deployed;

    /**
     * @param current the model being trained (read between its updates)
     * @param deployed the version consumers hold at the start
     */
    ValidationProbe(ContinualDigitsStream stream, DigitClassifier current, InferenceModel deployed, long seed) {
        this.stream = stream;
        this.current = current;
        this.deployed = deployed;
        this.seed = seed;
    }

    /** The version just published, a read-only copy of the model. */
    void deployed(InferenceModel version) {
        this.deployed = version;
    }

    @Override
    public Measurement measure(long iteration) {
        List<ContinualDigitsStream.Example> batch = batch(iteration);
        double panel = stream.evaluateValidation(current, Math.min(iteration, stream.horizon()))
                .meanLoss();
        return new Measurement(meanLoss(deployed, batch), meanLoss(current, batch), panel);
    }

    /**
     * The model being trained, scored on the validation batch of {@code iteration} (the batch {@link #measure} scores).
     */
    double currentLoss(long iteration) {
        return meanLoss(current, batch(iteration));
    }

    /** The validation batch of {@code iteration}, drawn from the validation half. */
    List<ContinualDigitsStream.Example> batch(long iteration) {
        return stream.sampleValidations(
                Math.min(iteration, stream.horizon()), BATCH, Requests.mix(seed ^ SALT, iteration));
    }

    static double meanLoss(DigitClassifier model, List<ContinualDigitsStream.Example> batch) {
        double sum = 0;
        for (ContinualDigitsStream.Example e : batch) {
            sum += model.loss(e.x(), e.label());
        }
        return sum / batch.size();
    }
}
