package io.viper.transfer.cuda.internal;

import io.viper.ViperConfig;
import io.viper.net.FrameChannel;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import java.io.DataInputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * Producer side of {@code cuda-pipe://host:port}, the cross-node GPU path. A request names a version and byte ranges;
 * under a read lease the server streams exactly those bytes, in range order, then an {@code OK} frame. A version staged
 * on the GPU is streamed through a two-stage {@link ChunkPipeline} (device to pinned host, pinned host to the socket)
 * with {@link PipeClient#BUFFERS} pinned chunk buffers; a host-staged one is written from host memory.
 */
public final class PipeServer extends ServerBase {
    static final byte READ = 1;

    public PipeServer(URI bind, ViperConfig config) {
        super("cuda-pipe", bind, config);
        // Where UCX moves CUDA memory itself, consumers prefer ucx-cuda:// (lower priority number).
        LOG.log(
                System.Logger.Level.INFO,
                "cuda-pipe at {0}: GPU data crosses nodes through this pipelined path",
                location().uri());
    }

    @Override
    public void expose(StagedCheckpoint staged) {
        exposed.put(key(staged.model(), staged.version()), staged);
    }

    @Override
    public void withdraw(StagedCheckpoint staged) {
        exposed.remove(key(staged.model(), staged.version()));
    }

    @Override
    void serve(FrameChannel ch) throws IOException {
        while (true) {
            DataInputStream in = request(ch);
            byte op = in.readByte();
            if (op != READ) {
                throw new IOException("unknown cuda-pipe request " + op);
            }
            String model = in.readUTF();
            long version = in.readLong();
            int n = in.readInt();
            if (n < 0 || n > 1_000_000) {
                throw new IOException("cuda-pipe request with " + n + " ranges");
            }
            List<long[]> ranges = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                ranges.add(new long[] {in.readLong(), in.readLong()});
            }
            StagedCheckpoint s = exposed.get(key(model, version));
            ReadLease lease = s == null || closed ? null : s.tryLease();
            if (lease == null) {
                Wire.send(ch, out -> out.writeByte(Wire.GONE));
                continue;
            }
            begin();
            try (lease) {
                MemorySegment data = s.data();
                for (long[] r : ranges) {
                    if (r[0] < 0 || r[1] < 0 || r[0] > data.byteSize() - r[1]) {
                        Wire.send(ch, out -> {
                            out.writeByte(Wire.FAILED);
                            out.writeUTF("range " + r[0] + "+" + r[1] + " is outside the " + data.byteSize()
                                    + " bytes of " + model + " v" + version);
                        });
                        return;
                    }
                }
                Wire.send(ch, out -> out.writeByte(Wire.OK));
                DeviceBuffer dev = s.device().orElse(null);
                if (dev == null) {
                    for (long[] r : ranges) {
                        Wire.write(ch, data.asSlice(r[0], r[1]));
                    }
                } else {
                    streamFromDevice(ch, dev, ranges);
                }
                Wire.send(ch, out -> out.writeByte(Wire.OK));
            } finally {
                end();
            }
        }
    }

    private static void streamFromDevice(FrameChannel ch, DeviceBuffer dev, List<long[]> ranges) {
        List<MemorySegment> pinned = new ArrayList<>();
        try {
            for (int b = 0; b < PipeClient.BUFFERS; b++) {
                pinned.add(Cuda.allocPinned(dev.device(), PipeClient.CHUNK));
            }
            new ChunkPipeline(
                            "viper-cuda-pipe-send",
                            List.of(
                                    (c, b) -> Cuda.toHost(
                                            dev.device(),
                                            dev.pointer(c.offset(), c.length()),
                                            pinned.get(b).asSlice(0, c.length())),
                                    (c, b) -> Wire.write(ch, pinned.get(b).asSlice(0, c.length()))),
                            PipeClient.BUFFERS)
                    .run(ChunkPipeline.split(ranges, PipeClient.CHUNK));
        } finally {
            for (MemorySegment p : pinned) {
                Cuda.freePinned(dev.device(), p);
            }
        }
    }
}
