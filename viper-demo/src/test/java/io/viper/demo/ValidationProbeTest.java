package io.viper.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.viper.demo.digits.Trainer;
import io.viper.scheduler.StalenessProbe;
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
        assertEquals(t.stream().evaluateHalves(t.model(), 200)[0], m.panel(), 0.0);
        assertEquals(m.panel(), probe.measure(200).panel(), 0.0, "the same images, the same model");
        assertNotEquals(m.current(), probe.measure(201).current(), "the sample is drawn again each iteration");
        t.step();
        assertNotEquals(m.panel(), probe.measure(201).panel(), "the model moved");
    }
}
