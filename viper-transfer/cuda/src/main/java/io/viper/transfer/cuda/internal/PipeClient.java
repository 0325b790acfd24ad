package io.viper.transfer.cuda.internal;

import io.viper.auth.ClientAuth;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.net.FrameChannel;
import io.viper.spi.ByteRange;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.TransportClient;
import java.io.DataInputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Consumer side of {@code cuda-pipe://}: asks for byte ranges and receives them through a two-stage
 * {@link ChunkPipeline} (socket to pinned host chunk, pinned chunk to the device buffer) with {@value #BUFFERS} chunk
 * buffers of {@value #CHUNK} bytes, so that the network and the host-to-device copy overlap (and, on a GPU-staged
 * producer, the producer's device-to-host copy too). Reads into host memory skip the GPU. Thread-safe: one connection
 * per read.
 */
public final class PipeClient implements TransportClient {
    /** Bytes per chunk. */
    public static final long CHUNK = 16L << 20;
    /** Chunk buffers per side (triple buffering). */
    public static final int BUFFERS = 3;

    private final int timeoutMs;
    private final ClientAuth auth;

    /**
     * A client whose waits fail after {@code timeoutMs} without progress, proving {@code auth}'s credentials to
     * producers.
     */
    public PipeClient(int timeoutMs, ClientAuth auth) {
        this.timeoutMs = timeoutMs;
        this.auth = auth;
    }

    @Override
    public void read(Manifest manifest, Location location, List<ByteRange> ranges, MemorySegment destination) {
        transfer(manifest, location, ranges, destination.byteSize(), ch -> {
            for (ByteRange r : ranges) {
                Wire.read(ch, destination.asSlice(r.destinationOffset(), r.length()));
            }
        });
    }

    @Override
    public void readToDevice(Manifest manifest, Location location, List<ByteRange> ranges, DeviceBuffer destination) {
        Cuda.ensure();
        int dev = destination.device();
        transfer(manifest, location, ranges, destination.byteSize(), ch -> {
            List<MemorySegment> pinned = new ArrayList<>();
            try {
                for (int b = 0; b < BUFFERS; b++) {
                    pinned.add(Cuda.allocPinned(dev, CHUNK));
                }
                List<long[]> dst = ranges.stream()
                        .map(r -> new long[] {r.destinationOffset(), r.length()})
                        .toList();
                new ChunkPipeline(
                                "viper-cuda-pipe-recv",
                                List.of(
                                        (c, b) -> Wire.read(ch, pinned.get(b).asSlice(0, c.length())),
                                        (c, b) -> Cuda.toDevice(
                                                dev,
                                                pinned.get(b).asSlice(0, c.length()),
                                                destination.pointer(c.offset(), c.length()))),
                                BUFFERS)
                        .run(ChunkPipeline.split(dst, CHUNK));
            } finally {
                for (MemorySegment p : pinned) {
                    Cuda.freePinned(dev, p);
                }
            }
        });
    }

    private interface Receive {
        void receive(FrameChannel ch) throws IOException;
    }

    private void transfer(Manifest m, Location loc, List<ByteRange> ranges, long destinationSize, Receive receive) {
        String what = m.model() + " v" + m.version() + " from " + loc.uri();
        for (ByteRange r : ranges) {
            if (r.sourceOffset() + r.length() > m.totalBytes()
                    || r.destinationOffset() + r.length() > destinationSize) {
                throw new ViperConfigException(what + ": range " + r + " is outside the model or the destination");
            }
        }
        try (FrameChannel ch = Wire.connect(loc.uri(), "cuda-pipe", timeoutMs, auth)) {
            Wire.send(ch, out -> {
                out.writeByte(PipeServer.READ);
                out.writeUTF(m.model());
                out.writeLong(m.version());
                out.writeInt(ranges.size());
                for (ByteRange r : ranges) {
                    out.writeLong(r.sourceOffset());
                    out.writeLong(r.length());
                }
            });
            DataInputStream in = Wire.receive(ch);
            byte status = in.readByte();
            if (status == Wire.GONE) {
                throw new ViperNotFoundException(what + ": the producer no longer serves this version");
            }
            if (status != Wire.OK) {
                throw new RetriableViperException(ViperException.Reason.TRANSFER, what + ": " + in.readUTF());
            }
            receive.receive(ch);
            if (Wire.receive(ch).readByte() != Wire.OK) {
                throw new RetriableViperException(
                        ViperException.Reason.TRANSFER,
                        what + ": the producer did not confirm the end of the transfer");
            }
        } catch (IOException e) {
            throw new RetriableViperException(ViperException.Reason.TRANSFER, what + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        // Connections are per read; nothing is held between reads.
    }
}
