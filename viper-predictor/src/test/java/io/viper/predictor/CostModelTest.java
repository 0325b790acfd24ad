package io.viper.predictor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.viper.errors.ViperConfigException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class CostModelTest {

    @Test
    void regressionRecoversLatencyAndBandwidthPerPath() {
        Random r = new Random(1);
        List<CostModel.Sample> samples = new ArrayList<>();
        for (int i = 1; i <= 20; i++) {
            long size = i * 100_000_000L;
            // tcp: 5 ms + size / 1.2 GB/s; host: 1 ms + size / 12 GB/s; 1% noise
            samples.add(new CostModel.Sample(CostModel.Phase.LOAD, "TCP", size, (0.005 + size / 1.2e9) * (1 + 0.01 * r.nextGaussian())));
            samples.add(new CostModel.Sample(CostModel.Phase.LOAD, "host", size, (0.001 + size / 12e9) * (1 + 0.01 * r.nextGaussian())));
            samples.add(new CostModel.Sample(CostModel.Phase.SAVE, "host", size, 0.002 + size / 8e9));
        }
        CostModel m = CostModel.fit(samples);
        long gb = 1_000_000_000L;
        assertEquals(0.005 + 1 / 1.2, m.loadSeconds("tcp", gb), 0.02);
        assertEquals(0.001 + 1 / 12.0, m.loadSeconds("host", gb), 0.005);
        assertEquals(0.002 + 1 / 8.0, m.saveSeconds("host", gb), 1e-9);
        assertEquals("ols", m.line(CostModel.Phase.LOAD, "tcp").source());
        assertEquals(20, m.line(CostModel.Phase.LOAD, "tcp").samples());
        // a path without samples keeps its default
        assertEquals(CostModel.defaults().loadSeconds("pfs", gb), m.loadSeconds("pfs", gb), 0);
    }

    @Test
    void defaultsComeFromTheTransferMeasurements() {
        CostModel d = CostModel.defaults();
        long gb = 1_000_000_000L;
        assertEquals(0.001 + 1 / 1.3, d.loadSeconds("tcp", gb), 1e-9);
        assertEquals(0.001 + 1 / 15.0, d.loadSeconds("host", gb), 1e-9);
        assertEquals(0.0005 + 1 / 15.0, d.saveSeconds("gpu", gb), 1e-9);
        assertEquals("default", d.line(CostModel.Phase.LOAD, "gpu").source());
    }

    @Test
    void fewSamplesUseMeanThroughput() {
        CostModel m = CostModel.fit(List.of(new CostModel.Sample(CostModel.Phase.LOAD, "pfs", 2_000_000_000L, 4.0)));
        assertEquals(2.0, m.loadSeconds("pfs", 1_000_000_000L), 1e-12);
        assertEquals("mean", m.line(CostModel.Phase.LOAD, "pfs").source());
    }

    @Test
    void rejectsBadInput() {
        assertThrows(ViperConfigException.class, () -> new CostModel.Sample(CostModel.Phase.LOAD, "tcp", 0, 1));
        assertThrows(ViperConfigException.class, () -> new CostModel.Sample(CostModel.Phase.LOAD, "tcp", 10, -1));
        assertThrows(ViperConfigException.class, () -> new CostModel.Sample(CostModel.Phase.LOAD, " ", 10, 1));
        assertThrows(ViperConfigException.class, () -> CostModel.defaults().loadSeconds("carrier-pigeon", 10));
        assertThrows(ViperConfigException.class, () -> CostModel.defaults().loadSeconds("tcp", -5));
    }
}
