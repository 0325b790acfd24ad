package io.viper.predictor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.viper.TransferPath;
import io.viper.errors.ViperConfigException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class CostModelTest {

    @Test
    void regressionRecoversLatencyAndBandwidthPerPath() {
        Random r = new Random(1);
        List<CostModel.Sample> samples = new ArrayList<>();
        for (int i = 1; i <= 20; i++) {
            long size = i * 100_000_000L;
            // tcp: 5 ms + size / 1.2 GB/s; host: 1 ms + size / 12 GB/s; 1% noise
            samples.add(new CostModel.Sample(
                    CostModel.Phase.LOAD,
                    TransferPath.parse("TCP"),
                    size,
                    (0.005 + size / 1.2e9) * (1 + 0.01 * r.nextGaussian())));
            samples.add(new CostModel.Sample(
                    CostModel.Phase.LOAD,
                    TransferPath.HOST,
                    size,
                    (0.001 + size / 12e9) * (1 + 0.01 * r.nextGaussian())));
            samples.add(new CostModel.Sample(CostModel.Phase.SAVE, TransferPath.HOST, size, 0.002 + size / 8e9));
        }
        CostModel m = CostModel.fit(samples);
        long gb = 1_000_000_000L;
        assertEquals(0.005 + 1 / 1.2, m.loadSeconds(TransferPath.TCP, gb), 0.02);
        assertEquals(0.001 + 1 / 12.0, m.loadSeconds(TransferPath.HOST, gb), 0.005);
        assertEquals(0.002 + 1 / 8.0, m.saveSeconds(TransferPath.HOST, gb), 1e-9);
        assertEquals("ols", m.line(CostModel.Phase.LOAD, TransferPath.TCP).source());
        assertEquals(20, m.line(CostModel.Phase.LOAD, TransferPath.TCP).samples());
        // a path without samples keeps its default
        assertEquals(CostModel.defaults().loadSeconds(TransferPath.PFS, gb), m.loadSeconds(TransferPath.PFS, gb), 0);
    }

    @Test
    void defaultsComeFromTheTransferMeasurements() {
        CostModel d = CostModel.defaults();
        long gb = 1_000_000_000L;
        assertEquals(0.001 + 1 / 1.3, d.loadSeconds(TransferPath.TCP, gb), 1e-9);
        assertEquals(0.001 + 1 / 15.0, d.loadSeconds(TransferPath.HOST, gb), 1e-9);
        assertEquals(0.0005 + 1 / 15.0, d.saveSeconds(TransferPath.GPU, gb), 1e-9);
        assertEquals("default", d.line(CostModel.Phase.LOAD, TransferPath.GPU).source());
    }

    @Test
    void fewSamplesUseMeanThroughput() {
        CostModel m = CostModel.fit(
                List.of(new CostModel.Sample(CostModel.Phase.LOAD, TransferPath.PFS, 2_000_000_000L, 4.0)));
        assertEquals(2.0, m.loadSeconds(TransferPath.PFS, 1_000_000_000L), 1e-12);
        assertEquals("mean", m.line(CostModel.Phase.LOAD, TransferPath.PFS).source());
    }

    @Test
    void rejectsBadInput() {
        assertThrows(
                ViperConfigException.class, () -> new CostModel.Sample(CostModel.Phase.LOAD, TransferPath.TCP, 0, 1));
        assertThrows(
                ViperConfigException.class, () -> new CostModel.Sample(CostModel.Phase.LOAD, TransferPath.TCP, 10, -1));
        assertThrows(ViperConfigException.class, () -> new CostModel.Sample(CostModel.Phase.LOAD, null, 10, 1));
        assertThrows(
                ViperConfigException.class,
                () -> CostModel.defaults().loadSeconds(TransferPath.parse("carrier-pigeon"), 10));
        assertThrows(ViperConfigException.class, () -> CostModel.defaults().loadSeconds(TransferPath.TCP, -5));
    }

    @Test
    void everyPathTheBenchAndTheDemoNameIsPricedByItsLine() {
        CostModel d = CostModel.defaults();
        long gb = 1_000_000_000L;
        for (TransferPath p : TransferPath.values()) {
            for (String name : Stream.concat(Stream.of(p.displayName()), p.aliases().stream())
                    .toList()) {
                TransferPath parsed = TransferPath.parse(name);
                assertEquals(d.line(CostModel.Phase.LOAD, parsed), d.line(CostModel.Phase.LOAD, p), name);
            }
        }
        assertEquals(d.loadSeconds(TransferPath.HOST, gb), d.loadSeconds(TransferPath.INLINE, gb), 0);
        assertEquals(d.loadSeconds(TransferPath.TCP, gb), d.loadSeconds(TransferPath.GPU_PIPE, gb), 0);
        // samples of inline updates fit the line host updates are priced by
        CostModel m = CostModel.fit(List.of(new CostModel.Sample(CostModel.Phase.LOAD, TransferPath.INLINE, gb, 0.5)));
        assertEquals(0.5, m.loadSeconds(TransferPath.HOST, gb), 1e-12);
        assertEquals("mean", m.line(CostModel.Phase.LOAD, TransferPath.HOST).source());
    }
}
