package io.viper.transfer.cuda.internal;

import io.viper.ViperConfig;
import io.viper.net.FrameChannel;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Producer side of {@code cuda-ipc://host:port}. Each exposed version needs its bytes in GPU memory: the producer's GPU
 * staging buffer when it staged there, else a device copy this server uploads in {@link #expose} (on device 0; freed on
 * withdraw). When the GPU has no room, the version is not offered here and consumers fall back to the next location.
 *
 * <p>Protocol per connection: {@code LEASE(model, version)} is answered with {@code OK}, the producer pid, device,
 * device address, size and the 64-byte {@code cuIpcGetMemHandle} of the buffer (or {@code GONE}); the read lease is
 * held until {@code RELEASE} or until the connection drops (a dead consumer never pins a buffer).
 */
public final class IpcServer extends ServerBase {
    static final byte LEASE = 1;
    static final byte RELEASE = 2;

    private final Map<String, Exposed> devices = new ConcurrentHashMap<>();

    private record Exposed(int device, long pointer, long size, byte[] handle, DeviceBuffer owned) {}

    public IpcServer(URI bind, ViperConfig config) {
        super("cuda-ipc", bind, config);
    }

    @Override
    public void expose(StagedCheckpoint staged) {
        String key = key(staged.model(), staged.version());
        long size = staged.data().byteSize();
        DeviceBuffer owned = null;
        try {
            DeviceBuffer dev = staged.device().orElse(null);
            if (dev == null) {
                owned = new JCudaDeviceBuffer(0, Math.max(1, size));
                Cuda.toDevice(0, staged.data(), owned.devicePointer());
                dev = owned;
            }
            byte[] handle = Cuda.ipcHandle(dev.device(), dev.devicePointer());
            devices.put(key, new Exposed(dev.device(), dev.devicePointer(), size, handle, owned));
            exposed.put(key, staged);
        } catch (RuntimeException e) {
            if (owned != null) {
                owned.close();
            }
            LOG.log(System.Logger.Level.WARNING, "cuda-ipc: not offering {0}: {1}", key, e.getMessage());
        }
    }

    @Override
    public void withdraw(StagedCheckpoint staged) {
        String key = key(staged.model(), staged.version());
        exposed.remove(key);
        Exposed e = devices.remove(key);
        if (e != null && e.owned != null) {
            e.owned.close();
        }
    }

    @Override
    void serve(FrameChannel ch) throws IOException {
        ReadLease lease = null;
        try {
            while (true) {
                DataInputStream in = request(ch);
                byte op = in.readByte();
                if (op == LEASE) {
                    String model = in.readUTF();
                    long version = in.readLong();
                    if (lease != null) {
                        lease.close();
                        lease = null;
                    }
                    String key = key(model, version);
                    StagedCheckpoint s = exposed.get(key);
                    Exposed e = devices.get(key);
                    ReadLease l = s == null || e == null || closed ? null : s.tryLease();
                    if (l == null) {
                        Wire.send(ch, out -> out.writeByte(Wire.GONE));
                        continue;
                    }
                    begin();
                    lease = counted(l);
                    Wire.send(ch, out -> {
                        out.writeByte(Wire.OK);
                        out.writeLong(ProcessHandle.current().pid());
                        out.writeInt(e.device);
                        out.writeLong(e.pointer);
                        out.writeLong(e.size);
                        out.writeInt(e.handle.length);
                        out.write(e.handle);
                    });
                } else if (op == RELEASE) {
                    if (lease != null) {
                        lease.close();
                        lease = null;
                    }
                    Wire.send(ch, out -> out.writeByte(Wire.OK));
                } else {
                    throw new IOException("unknown cuda-ipc request " + op);
                }
            }
        } finally {
            if (lease != null) {
                lease.close();
            }
        }
    }

    /** {@code l} that also ends this server's count of active transfers when closed (once). */
    private ReadLease counted(ReadLease l) {
        AtomicBoolean done = new AtomicBoolean();
        return () -> {
            if (done.compareAndSet(false, true)) {
                l.close();
                end();
            }
        };
    }

    @Override
    public void close() {
        super.close();
        for (Exposed e : devices.values()) {
            if (e.owned != null) {
                e.owned.close();
            }
        }
        devices.clear();
        exposed.clear();
    }
}
