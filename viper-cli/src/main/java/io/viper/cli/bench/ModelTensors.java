package io.viper.cli.bench;

import io.viper.Snapshot;
import io.viper.errors.ViperUnsupportedException;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import io.viper.spi.Providers;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The bench's model as a training job hands it to {@code publish}: 16 U8 tensors (one below 16 MiB) over one block of
 * random bytes, in host memory or a copy in GPU 0's memory. Stateless; the caller owns the memory it passes in, and
 * closes the device buffers it gets back.
 */
final class ModelTensors {
    private ModelTensors() {}

    /** The model as 16 U8 tensors in GPU memory, as a training job on the GPU hands them over. */
    static void splitDevice(Snapshot.TensorSink sink, DeviceBuffer model, long size) {
        forEachPart(
                size,
                (i, off, len) -> sink.addDevice(
                        "layer" + i + ".weight", DType.U8, new long[] {len}, model.pointer(off, len), model.device()));
    }

    static GpuProvider gpuProvider() {
        return Providers.gpu()
                .orElseThrow(() -> new ViperUnsupportedException("--paths gpu: no GPU provider is installed"));
    }

    /** A copy of {@code model} in memory of GPU 0; the caller closes it. */
    static DeviceBuffer toDevice(MemorySegment model) {
        GpuProvider g = gpuProvider();
        DeviceBuffer d = g.allocate(0, model.byteSize());
        g.copyToDevice(0, model, d.devicePointer());
        return d;
    }

    /** 16 U8 tensors from 16 MiB on (1 below), like the many tensors of a real model. */
    static void split(Snapshot.TensorSink sink, MemorySegment model) {
        forEachPart(
                model.byteSize(),
                (i, off, len) ->
                        sink.add("layer" + i + ".weight", DType.U8, new long[] {len}, model.asSlice(off, len)));
    }

    /**
     * As {@link #split(Snapshot.TensorSink, MemorySegment)}, each tensor with the bytes {@code changes} wrote since the
     * last snapshot.
     */
    static void split(Snapshot.TensorSink sink, MemorySegment model, ModelChanges changes) {
        forEachPart(
                model.byteSize(),
                (i, off, len) -> sink.add(
                        "layer" + i + ".weight",
                        DType.U8,
                        new long[] {len},
                        model.asSlice(off, len),
                        changes.writtenIn(off, len)));
        changes.described();
    }

    /**
     * {@code model} as the same 16 U8 tensors, to write into a file; they are views of {@code model}, which the caller
     * owns.
     */
    static List<Tensor> tensors(MemorySegment model) {
        List<Tensor> out = new ArrayList<>();
        forEachPart(
                model.byteSize(),
                (i, off, len) -> out.add(
                        Tensor.of("layer" + i + ".weight", DType.U8, new long[] {len}, model.asSlice(off, len))));
        return out;
    }

    private interface Part {
        void accept(int index, long offset, long length);
    }

    /** Splits {@code n} bytes into 16 parts (1 below 16 MiB), the last taking the remainder. */
    private static void forEachPart(long n, Part part) {
        int parts = n >= (16 << 20) ? 16 : 1;
        long chunk = n / parts;
        for (int i = 0; i < parts; i++) {
            long off = i * chunk;
            part.accept(i, off, i == parts - 1 ? n - off : chunk);
        }
    }

    /** Random bytes, the same on every run (seed 42), that neither compress nor repeat. */
    static void fill(MemorySegment seg) {
        SplittableRandom rnd = new SplittableRandom(42);
        for (long i = 0; i + 8 <= seg.byteSize(); i += 8) {
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
        }
    }
}
