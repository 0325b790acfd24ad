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
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Consumer side of {@code cuda-ipc://}: takes a lease on the control channel, maps the producer's staging buffer with
 * {@code cuIpcOpenMemHandle} (once per producer buffer: the last {@value #OPEN_HANDLES} mappings are kept), copies
 * device to device into the consumer's buffer, waits for the copy, and releases the lease. In the producer's own
 * process it uses the address directly (CUDA cannot open a process's own handle). Thread-safe.
 */
public final class IpcClient implements TransportClient {
    static final int OPEN_HANDLES = 4;

    private final int timeoutMs;
    private final ClientAuth auth;
    private final Map<String, Mapping> mappings = new LinkedHashMap<>();

    private static final class Mapping {
        final int device;
        final long address;
        int users;
        boolean evicted;

        Mapping(int device, long address) {
            this.device = device;
            this.address = address;
        }
    }

    private record Grant(long pid, int device, long pointer, long size, byte[] handle) {}

    /**
     * A client whose waits fail after {@code timeoutMs} without progress, proving {@code auth}'s credentials to
     * producers.
     */
    public IpcClient(int timeoutMs, ClientAuth auth) {
        this.timeoutMs = timeoutMs;
        this.auth = auth;
    }

    @Override
    public void read(Manifest manifest, Location location, List<ByteRange> ranges, MemorySegment destination) {
        transfer(
                manifest,
                location,
                ranges,
                destination.byteSize(),
                -1,
                (src, r, dev) -> Cuda.toHost(
                        dev, src + r.sourceOffset(), destination.asSlice(r.destinationOffset(), r.length())));
    }

    @Override
    public void readToDevice(Manifest manifest, Location location, List<ByteRange> ranges, DeviceBuffer destination) {
        transfer(
                manifest,
                location,
                ranges,
                destination.byteSize(),
                destination.device(),
                (src, r, dev) -> Cuda.deviceToDevice(
                        destination.device(),
                        src + r.sourceOffset(),
                        destination.pointer(r.destinationOffset(), r.length()),
                        r.length()));
    }

    private interface Copy {
        void copy(long source, ByteRange range, int device);
    }

    private void transfer(
            Manifest m, Location loc, List<ByteRange> ranges, long destinationSize, int localDevice, Copy copy) {
        Cuda.ensure();
        String what = m.model() + " v" + m.version() + " from " + loc.uri();
        for (ByteRange r : ranges) {
            if (r.sourceOffset() + r.length() > m.totalBytes()
                    || r.destinationOffset() + r.length() > destinationSize) {
                throw new ViperConfigException(what + ": range " + r + " is outside the model or the destination");
            }
        }
        try (FrameChannel ch = Wire.connect(loc.uri(), "cuda-ipc", timeoutMs, auth)) {
            Wire.send(ch, out -> {
                out.writeByte(IpcServer.LEASE);
                out.writeUTF(m.model());
                out.writeLong(m.version());
            });
            DataInputStream in = Wire.receive(ch);
            byte status = in.readByte();
            if (status != Wire.OK) {
                throw new ViperNotFoundException(what + ": the producer no longer serves this version");
            }
            Grant g = new Grant(in.readLong(), in.readInt(), in.readLong(), in.readLong(), in.readNBytes(in.readInt()));
            if (g.size < m.totalBytes()) {
                throw new RetriableViperException(
                        ViperException.Reason.TRANSFER,
                        what + ": producer buffer of " + g.size + " bytes is smaller than the model");
            }
            int device = localDevice >= 0 ? localDevice : g.device;
            boolean own = g.pid == ProcessHandle.current().pid();
            Mapping mapping = own ? null : open(device, g.handle);
            try {
                long src = own ? g.pointer : mapping.address;
                for (ByteRange r : ranges) {
                    if (r.length() > 0) {
                        try {
                            copy.copy(src, r, own ? g.device : device);
                        } catch (ViperException e) {
                            throw new RetriableViperException(
                                    ViperException.Reason.TRANSFER, what + ": " + e.getMessage(), e);
                        }
                    }
                }
            } finally {
                if (mapping != null) {
                    done(mapping);
                }
            }
            Wire.send(ch, out -> out.writeByte(IpcServer.RELEASE));
            Wire.receive(ch).readByte();
        } catch (IOException e) {
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER, what + ": control channel failed: " + e.getMessage(), e);
        }
    }

    private synchronized Mapping open(int device, byte[] handle) {
        String key = device + ":" + HexFormat.of().formatHex(handle);
        Mapping mp = mappings.remove(key);
        if (mp == null) {
            mp = new Mapping(device, Cuda.ipcOpen(device, handle));
        }
        mappings.put(key, mp);
        mp.users++;
        Iterator<Mapping> it = mappings.values().iterator();
        while (mappings.size() > OPEN_HANDLES && it.hasNext()) {
            Mapping old = it.next();
            it.remove();
            old.evicted = true;
            if (old.users == 0) {
                Cuda.ipcClose(old.device, old.address);
            }
        }
        return mp;
    }

    private synchronized void done(Mapping mp) {
        mp.users--;
        if (mp.evicted && mp.users == 0) {
            Cuda.ipcClose(mp.device, mp.address);
        }
    }

    @Override
    public synchronized void close() {
        for (Mapping mp : mappings.values()) {
            if (mp.users == 0) {
                try {
                    Cuda.ipcClose(mp.device, mp.address);
                } catch (RuntimeException e) {
                    System.getLogger(IpcClient.class.getName())
                            .log(System.Logger.Level.DEBUG, "cuIpcCloseMemHandle: " + e.getMessage());
                }
            } else {
                mp.evicted = true;
            }
        }
        mappings.clear();
    }
}
