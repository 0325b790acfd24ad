package io.viper.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/**
 * The polling baseline of {@code viper bench transfer}: each measured update is published after a pause uniform over
 * one poll interval, so that it meets the poller at a phase of its own, not at the one the loop before left.
 */
class PollPhaseTest {
    @Test
    void pausesSpreadOverOneIntervalAndRepeatPerSize() {
        LongSupplier pauses = TransferBench.pollPhase(1 << 30, Duration.ofSeconds(1));
        LongSupplier again = TransferBench.pollPhase(1 << 30, Duration.ofSeconds(1));
        int[] quarters = new int[4];
        for (int i = 0; i < 400; i++) {
            long ms = pauses.getAsLong();
            assertTrue(ms >= 0 && ms < 1000, "within one interval: " + ms);
            assertEquals(ms, again.getAsLong(), "the same sequence for the same size: a run repeats");
            quarters[(int) (ms / 250)]++;
        }
        for (int q : quarters) {
            assertTrue(q >= 60, "every quarter of the interval is met (of 400, about 100 each): " + q);
        }
    }

    @Test
    void noIntervalNoPause() {
        LongSupplier pauses = TransferBench.pollPhase(4096, Duration.ZERO);
        assertEquals(0, pauses.getAsLong());
    }
}
