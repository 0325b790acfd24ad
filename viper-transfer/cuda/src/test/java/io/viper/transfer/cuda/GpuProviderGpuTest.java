package io.viper.transfer.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.hash.ParallelHash64;
import io.viper.spi.DeviceBuffer;
import io.viper.testing.TestStagedCheckpoint;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The jcuda GpuProvider on a real GPU: copies both ways and device to device, and the device hash against the host
 * reference.
 */
@Tag("gpu")
class GpuProviderGpuTest {
    @BeforeEach
    void gpu() {
        GpuTests.assumeGpu();
    }

    @Test
    void copiesRoundTripExactly() {
        try (Arena arena = Arena.ofConfined();
                DeviceBuffer a = GpuTests.GPU.allocate(0, 3 << 20);
                DeviceBuffer b = GpuTests.GPU.allocate(0, 3 << 20)) {
            assertTrue(GpuTests.GPU.deviceCount() >= 1);
            assertTrue(GpuTests.GPU.freeBytes(0) > 0);
            MemorySegment src = arena.allocate(3 << 20, 64);
            TestStagedCheckpoint.fill(src, 42);
            GpuTests.GPU.copyToDevice(0, src, a.devicePointer());
            GpuTests.GPU.copyDeviceToDevice(0, a.pointer(1, (3 << 20) - 1), b.devicePointer(), (3 << 20) - 1);
            GpuTests.assertSame(src, GpuTests.toHost(a, 0, 3 << 20, arena), "host -> device -> host");
            GpuTests.assertSame(
                    src.asSlice(1), GpuTests.toHost(b, 0, (3 << 20) - 1, arena), "device -> device (odd offset)");
            // Heap segments go through a bounce buffer.
            byte[] heap = new byte[1000];
            heap[999] = 7;
            GpuTests.GPU.copyToDevice(0, MemorySegment.ofArray(heap), b.devicePointer());
            byte[] back = new byte[1000];
            GpuTests.GPU.copyToHost(0, b.devicePointer(), MemorySegment.ofArray(back));
            assertEquals(7, back[999]);
            assertThrows(IllegalArgumentException.class, () -> a.pointer(1, 3 << 20));
        }
    }

    @Test
    void pinnedHostMemoryCopiesExactlyAndUnpins() {
        long size = 32L << 20;
        try (Arena arena = Arena.ofConfined();
                DeviceBuffer d = GpuTests.GPU.allocate(0, size)) {
            MemorySegment host = arena.allocate(size, 4096);
            TestStagedCheckpoint.fill(host, 11);
            try (var pin = GpuTests.GPU.pinHost(0, host)) {
                assertEquals(host, pin.segment());
                GpuTests.GPU.copyToDevice(0, host, d.devicePointer());
                MemorySegment back = arena.allocate(size, 4096);
                try (var pinBack = GpuTests.GPU.pinHost(0, back)) {
                    GpuTests.GPU.copyToHost(0, d.devicePointer(), back);
                }
                GpuTests.assertSame(host, back, "pinned host -> device -> pinned host");
            }
            // Unpinned again: pinning the same range a second time succeeds (the driver refuses a double registration).
            GpuTests.GPU.pinHost(0, host).close();
            assertThrows(
                    IllegalArgumentException.class, () -> GpuTests.GPU.pinHost(0, MemorySegment.ofArray(new byte[8])));
        }
    }

    @Test
    void deviceHashEqualsTheHostReferenceAtEveryAlignmentAndTail() {
        long size = (64L << 20) + 13;
        try (Arena arena = Arena.ofConfined();
                DeviceBuffer d = GpuTests.GPU.allocate(0, size)) {
            MemorySegment host = arena.allocate(size, 64);
            TestStagedCheckpoint.fill(host, 7);
            GpuTests.GPU.copyToDevice(0, host, d.devicePointer());
            for (long off : new long[] {0, 1, 3, 8, 4096}) {
                for (long len : new long[] {0, 1, 7, 8, 9, 4095, 1 << 20, size - off - 5}) {
                    long expected = ParallelHash64.hash(host.asSlice(off, len));
                    assertEquals(
                            ParallelHash64.toHex(expected),
                            ParallelHash64.toHex(GpuTests.GPU.hash64(0, d.pointer(off, len), len)),
                            "offset " + off + ", length " + len);
                }
            }
            long before = GpuTests.GPU.hash64(0, d.devicePointer(), size);
            host.set(ValueLayout.JAVA_BYTE, size / 2, (byte) ~host.get(ValueLayout.JAVA_BYTE, size / 2));
            GpuTests.GPU.copyToDevice(0, host.asSlice(size / 2, 1), d.pointer(size / 2, 1));
            assertNotEquals(
                    before,
                    GpuTests.GPU.hash64(0, d.devicePointer(), size),
                    "one flipped byte changes the device hash");
        }
    }
}
