package io.viper.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.demo.internal.DemoEvents.ConsumerResult;
import io.viper.demo.internal.DemoEvents.Update;
import io.viper.scheduler.Schedule;
import java.util.List;
import org.junit.jupiter.api.Test;

class DemoNotesTest {
    static PolicyOutcome outcome(DemoPolicy policy, Schedule schedule, double predicted, double... cils) {
        ConsumerResult consumer = new ConsumerResult(
                4,
                cils,
                3 * cils.length,
                new double[] {1, 1, 1, 1},
                new long[] {1, 1, 2, 3},
                List.of(new Update(1, 9, "tcp"), new Update(2, 2, "tcp")));
        return PolicyOutcome.of(policy, schedule, predicted, 0.001, DemoReportTest.PRODUCER, consumer, 1);
    }

    static Schedule schedule(String name, String detail) {
        return new Schedule(name, new long[] {30, 40}, 7, 0, detail);
    }

    @Test
    void optimalLosingToEpochBeyondTheNoiseIsExplained() {
        PolicyOutcome epoch = outcome(DemoPolicy.EPOCH, schedule("epoch", "every 10"), 100, 100, 102, 98);
        PolicyOutcome optimal = outcome(DemoPolicy.OPTIMAL, schedule("optimal", "min CIL"), 90, 110, 111, 109);
        List<String> notes = DemoNotes.of(List.of(epoch, optimal));
        assertEquals(1, notes.size(), notes.toString());
        assertTrue(
                notes.getFirst()
                        .startsWith("note: optimal served 10.0% more than epoch though it predicted 10.0%" + " less"),
                notes.getFirst());
        // within the request noise, or as predicted: nothing to explain
        PolicyOutcome close = outcome(DemoPolicy.OPTIMAL, schedule("optimal", "min CIL"), 90, 101, 90, 112);
        assertTrue(DemoNotes.of(List.of(epoch, close)).isEmpty());
        PolicyOutcome foreseen = outcome(DemoPolicy.OPTIMAL, schedule("optimal", "min CIL"), 120, 110, 111, 109);
        assertTrue(DemoNotes.of(List.of(epoch, foreseen)).isEmpty());
    }

    @Test
    void adaptiveFallingBackIsSaid() {
        PolicyOutcome adaptive = outcome(
                DemoPolicy.ADAPTIVE, schedule("adaptive", "FALLBACK to 2 evenly spaced: never falls"), 9, 10, 10);
        assertEquals(
                List.of("note: adaptive FALLBACK to 2 evenly spaced: never falls"), DemoNotes.of(List.of(adaptive)));
        PolicyOutcome plain = outcome(DemoPolicy.ADAPTIVE, schedule("adaptive", "loss drop > 0.1"), 9, 10, 10);
        assertTrue(DemoNotes.of(List.of(plain)).isEmpty());
    }
}
