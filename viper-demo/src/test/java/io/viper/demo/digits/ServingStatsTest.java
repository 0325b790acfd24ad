package io.viper.demo.digits;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class ServingStatsTest {

    @Test
    void emptyStatsHaveZeroCilAndNoMeans() {
        ServingStats s = new ServingStats();
        assertEquals(0, s.count());
        assertEquals(0.0, s.cil());
        assertTrue(Double.isNaN(s.meanLoss()));
        assertTrue(Double.isNaN(s.accuracy()));
        assertTrue(s.timeSeries(10).isEmpty());
    }

    @Test
    void cilIsTheSumOfLossesAndAccuracyTheShareOfCorrectAnswers() {
        ServingStats s = new ServingStats();
        s.record(100L, 0, 1, 0.5, true);
        s.record(200L, 5, 1, 1.5, false);
        s.record(300L, 12, 2, 0.25, true);
        s.record(400L, 31, 3, 0.75, true);
        assertEquals(4, s.count());
        assertEquals(3.0, s.cil());
        assertEquals(0.75, s.meanLoss());
        assertEquals(0.75, s.accuracy());
        List<ServingStats.Entry> e = s.entries();
        assertEquals(new ServingStats.Entry(300L, 12, 2, 0.25, true), e.get(2));

        List<ServingStats.Bucket> buckets = s.timeSeries(10);
        assertEquals(4, buckets.size()); // [0,10) [10,20) [20,30) empty, [30,40)
        assertEquals(new ServingStats.Bucket(0, 10, 2, 1.0, 0.5, 2.0), buckets.get(0));
        assertEquals(new ServingStats.Bucket(10, 20, 1, 0.25, 1.0, 2.25), buckets.get(1));
        assertEquals(0, buckets.get(2).count());
        assertTrue(Double.isNaN(buckets.get(2).meanLoss()));
        assertEquals(2.25, buckets.get(2).cumulativeCil());
        assertEquals(3.0, buckets.get(3).cumulativeCil());

        StringBuilder csv = new StringBuilder();
        s.writeTimeSeriesCsv(csv, 10);
        String[] lines = csv.toString().split("\n");
        assertEquals("start_position,end_position,count,mean_loss,accuracy,cumulative_cil", lines[0]);
        assertEquals("0,10,2,1.00000,0.500000,2.00000", lines[1]);
        assertEquals("20,30,0,,,2.25000", lines[3]);
        StringBuilder entries = new StringBuilder();
        s.writeEntriesCsv(entries);
        assertEquals(
                "time_ns,position,model_version,loss,correct",
                entries.toString().split("\n")[0]);
        assertEquals("200,5,1,1.50000,0", entries.toString().split("\n")[2]);
    }

    @Test
    void serveRecordsTheModelsLossAndCorrectness() {
        ContinualDigitsStream stream = new ContinualDigitsStream(StreamConfig.defaults(100, 1));
        InferenceModel m = new Mlp(Mlp.Config.defaults(1)).snapshot();
        ContinualDigitsStream.Example ex = stream.example(stream.requestIndices()[0], 10);
        ServingStats s = new ServingStats();
        int predicted = s.serve(m, 7, ex);
        assertEquals(m.predict(ex.x()), predicted);
        ServingStats.Entry e = s.entries().getFirst();
        assertEquals(10, e.position());
        assertEquals(7, e.modelVersion());
        assertEquals(m.loss(ex.x(), ex.label()), e.loss());
        assertEquals(predicted == ex.label(), e.correct());
    }

    @Test
    void rejectsNegativeOrNonFiniteLosses() {
        ServingStats s = new ServingStats();
        assertThrows(IllegalArgumentException.class, () -> s.record(0, 0, -0.1, true));
        assertThrows(IllegalArgumentException.class, () -> s.record(0, 0, Double.NaN, true));
        assertThrows(IllegalArgumentException.class, () -> s.record(0, 0, Double.POSITIVE_INFINITY, true));
        assertThrows(IllegalArgumentException.class, () -> s.timeSeries(0));
        assertEquals(0, s.count());
    }

    @Test
    void concurrentRecordsAreAllCounted() throws Exception {
        ServingStats s = new ServingStats();
        int threads = 4;
        int each = 20_000;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                fs.add(pool.submit(() -> {
                    go.await();
                    for (int i = 0; i < each; i++) {
                        s.record(i, id, 0.5, i % 2 == 0); // 0.5 sums exactly in binary
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(threads * each, s.count());
        assertEquals(threads * each * 0.5, s.cil());
        assertEquals(0.5, s.accuracy());
        assertEquals(threads * each, s.entries().size());
    }
}
