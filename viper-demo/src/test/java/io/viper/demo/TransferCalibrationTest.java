package io.viper.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.TransferPath;
import io.viper.predictor.CostModel;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The plan's t_s and t_load come from updates measured over the demo's transport, not from the model's defaults. */
class TransferCalibrationTest {
    @TempDir
    Path tmp;

    @Test
    void theCostModelIsFittedOnMeasuredUpdates() throws Exception {
        CostModel costs = TransferCalibration.measure(DemoTransport.TCP, 9640, tmp);
        for (CostModel.Phase phase : CostModel.Phase.values()) {
            CostModel.Line line = costs.line(phase, TransferPath.TCP);
            assertEquals("mean", line.source(), phase + ": fitted on the samples of one size");
            assertEquals(TransferCalibration.MEASURED, line.samples(), phase.name());
        }
        assertTrue(costs.loadSeconds(TransferPath.TCP, 9640) > 0, "an update takes time");
        // The plan takes its costs from the model it is given.
        DemoSettings s = DemoSettings.of(
                DemoPolicy.ALL, 300, 30, 3_000_000, 300, DemoTransport.TCP, "embedded://127.0.0.1:0", 7);
        DemoPlan plan = DemoPlan.of(s, costs);
        assertEquals(
                costs.loadSeconds(TransferPath.TCP, plan.modelBytes()),
                plan.input().tLoad());
        assertEquals(
                costs.saveSeconds(TransferPath.TCP, plan.modelBytes()),
                plan.input().tSave());
        assertEquals(DemoPlan.modelBytes(s), plan.modelBytes());
    }
}
