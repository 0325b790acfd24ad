package io.viper.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * A cold load's floor in {@code viper bench pfs}: the slowest of the disk's read, the kernel's fill of its page cache
 * and the first touch of the memory the load needs; several consumers at once share one copy of the bytes (the page
 * cache's, mapped by each).
 */
class PfsBenchFloorTest {
    private static PfsBench.Result result(long blockBytes, double readS, double touchS, double touchAtOnceS) {
        return result(blockBytes, readS, 0.0, touchS, touchAtOnceS); // a fill that binds nothing
    }

    private static PfsBench.Result result(
            long blockBytes, double readS, double fillS, double touchS, double touchAtOnceS) {
        DeviceBound.Figures disk = new DeviceBound.Figures(1.0, readS, fillS, Double.NaN, Double.NaN, true, true);
        return new PfsBench.Result(1 << 30, blockBytes, 4, 1.0, 1.0, 2.0, true, disk, touchS, touchAtOnceS, 0.5, 2);
    }

    @Test
    void oneLoadIsBoundByTheSlowerOfDiskAndMemory() {
        assertEquals(0.5, result(1 << 20, 0.5, 0.3, 1.2).coldFloorS());
        assertEquals(0.4, result(1 << 20, 0.2, 0.4, 1.2).coldFloorS());
    }

    @Test
    void theKernelsFillOfItsPageCacheBindsWhenItIsTheSlowest() {
        assertEquals(0.7, result(1 << 20, 0.5, 0.7, 0.3, 1.2).coldFloorS());
        assertEquals(0.5, result(1 << 20, 0.5, 0.4, 0.3, 1.2).coldFloorS());
        assertEquals(0.6, result(0, 0.2, 0.4, 0.6, 1.2).coldFloorS());
        assertEquals(0.7, result(0, 0.5, 0.7, 0.3, 1.2).concurrentFloorS());
    }

    @Test
    void eachConsumersOwnWorkIsDoneOncePerConsumerOnTheCores() {
        assertEquals(1.0, result(1 << 20, 0.5, 0.3, 1.2).concurrentCpuS()); // 4 x 0.5 s over 2 cores
        DeviceBound.Figures disk = new DeviceBound.Figures(1.0, 0.5, 0.0, Double.NaN, Double.NaN, true, true);
        assertEquals(
                0.25, new PfsBench.Result(1 << 30, 0, 2, 1.0, 1.0, 2.0, true, disk, 0.3, 0.6, 0.5, 4).concurrentCpuS());
        assertTrue(
                Double.isNaN(new PfsBench.Result(
                                1 << 30, 0, 0, 1.0, 1.0, Double.NaN, true, disk, 0.3, Double.NaN, Double.NaN, 2)
                        .concurrentCpuS()),
                "no loads at once, nothing to bound");
    }

    @Test
    void concurrentLoadsShareOneCopyOfTheBytesAsOneLoadDoes() {
        assertEquals(0.5, result(1 << 20, 0.5, 0.3, 1.2).concurrentFloorS());
        assertEquals(0.6, result(0, 0.5, 0.6, 1.2).concurrentFloorS());
    }
}
