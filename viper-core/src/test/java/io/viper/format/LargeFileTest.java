package io.viper.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.viper.tensor.Checkpoint;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A file over 2 GiB with a tensor over 2 GiB, created sparse (a few writes at positions, no full write), so that it is
 * fast and takes almost no disk.
 */
class LargeFileTest {
    private static final long BIG = 2_684_354_560L; // 2.5 GiB of U8
    private static final long GIB = 1L << 30;

    @TempDir
    Path dir;

    @Test
    void tensorsPastTwoGibibytesAreAddressable() throws IOException {
        long free = Files.getFileStore(dir).getUsableSpace();
        assumeTrue(
                free >= 3 * GIB,
                "needs 3 GiB free in " + dir + " for the sparse 2.5 GiB file, has " + (free >> 20) + " MiB");

        List<TensorInfo> layout = List.of(
                TensorInfo.of("big", DType.U8, new long[] {BIG}, 0),
                TensorInfo.of("small", DType.F32, new long[] {4}, BIG));
        byte[] head = SafetensorsHeader.encode(layout, Map.of("note", "sparse"));
        long dataStart = head.length;
        Path p = dir.resolve("large.safetensors");
        ByteBuffer small = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
        small.putFloat(1.5f).putFloat(-2f).putFloat(3.25f).putFloat(1e30f).flip();
        try (FileChannel ch = FileChannel.open(
                p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, StandardOpenOption.SPARSE)) {
            ch.write(ByteBuffer.wrap(head), 0);
            ch.write(ByteBuffer.wrap(new byte[] {11}), dataStart + (1L << 31)); // just past the int range
            ch.write(ByteBuffer.wrap(new byte[] {21, 22, 23}), dataStart + BIG - 3); // the big tensor's last bytes
            ch.write(small, dataStart + BIG);
        }
        assertEquals(dataStart + BIG + 16, Files.size(p));

        try (SafetensorsFile f = SafetensorsFile.open(p)) {
            assertEquals(BIG + 16, f.dataBytes());
            Tensor big = f.tensor("big");
            Tensor tail = f.tensor("small");
            assertEquals(
                    List.of("big", "small"),
                    f.tensors().stream().map(Tensor::name).toList());
            assertEquals(0, big.info().offset());
            assertEquals(BIG, big.byteSize());
            assertEquals(BIG, big.data().byteSize());
            assertEquals(BIG, tail.info().offset());
            assertEquals(16, tail.byteSize());
            assertEquals(11, big.data().get(ValueLayout.JAVA_BYTE, 1L << 31));
            assertEquals(0, big.data().get(ValueLayout.JAVA_BYTE, (1L << 31) + 1), "sparse hole reads as zero");
            assertArrayEquals(
                    new byte[] {21, 22, 23}, big.data().asSlice(BIG - 3, 3).toArray(ValueLayout.JAVA_BYTE));
            assertEquals(23.0, big.getDouble(BIG - 1));
            assertArrayEquals(new float[] {1.5f, -2f, 3.25f, 1e30f}, tail.toFloatArray());
            TensorStats stats = TensorStats.of(tail).orElseThrow();
            assertEquals(-2.0, stats.min());
            assertEquals(1e30f, stats.max());
            Checkpoint cp = f.checkpoint("large", 1);
            assertEquals(BIG + 16, cp.totalBytes());
            assertEquals(BIG, cp.tensor("small").info().offset());
            assertEquals(Map.of("note", "sparse"), cp.metadata());
        }
    }
}
