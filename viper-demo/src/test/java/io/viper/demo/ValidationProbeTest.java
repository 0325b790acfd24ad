package io.viper.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.demo.digits.ContinualDigitsStream;
import io.viper.demo.digits.Trainer;
import io.viper.scheduler.StalenessProbe;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class ValidationProbeTest {
    @Test
    void scoresTheCurrentModelOnTheSameHeldOutPanelEveryIteration() {
        Trainer t = DemoWorkload.DRIFT.trainer(2000, 4);
        for (int i = 0; i < 200; i++) {
            t.step();
        }
        ValidationProbe probe = new ValidationProbe(t.stream(), t.model(), t.snapshot(), 4);
        StalenessProbe.Measurement m = probe.measure(200);
        assertEquals(t.stream().evaluateValidation(t.model(), 200).meanLoss(), m.panel(), 0.0);
        assertEquals(m.panel(), probe.measure(200).panel(), 0.0, "the same images, the same model");
        assertNotEquals(m.current(), probe.measure(201).current(), "the sample is drawn again each iteration");
        t.step();
        assertNotEquals(m.panel(), probe.measure(201).panel(), "the model moved");
    }

    @Test
    void readsOnlyTheValidationHalfNeverARequestImage() {
        Trainer t = DemoWorkload.DRIFT.trainer(2000, 4);
        ValidationProbe probe = new ValidationProbe(t.stream(), t.model(), t.snapshot(), 4);
        Set<Integer> validation =
                Arrays.stream(t.stream().validationIndices()).boxed().collect(Collectors.toSet());
        for (long it = 0; it < 2100; it += 7) {
            for (ContinualDigitsStream.Example e : probe.batch(it)) {
                assertTrue(validation.contains(e.sourceIndex()), "iteration " + it + ": row " + e.sourceIndex());
            }
            assertEquals(
                    ValidationProbe.meanLoss(t.model(), probe.batch(it)), probe.currentLoss(it), 0.0, "what it scores");
        }
        assertEquals(
                t.stream().evaluateValidation(t.model(), 2000).meanLoss(),
                probe.measure(2500).panel(),
                0.0,
                "the panel is the validation half, where the stream ends");
    }
}
