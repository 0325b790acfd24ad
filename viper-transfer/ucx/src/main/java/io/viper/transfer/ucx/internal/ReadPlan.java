package io.viper.transfer.ucx.internal;

import io.viper.errors.ViperConfigException;
import io.viper.spi.ByteRange;
import io.viper.transfer.ucx.UcxConfig;
import java.util.List;

/**
 * The GETs of one read: chunk i copies {@code length[i]} bytes from remote offset to local address, which is
 * {@code destinationOffset[i]} bytes into the destination. Immutable by convention (the arrays are never written after
 * {@link #of}).
 */
record ReadPlan(long[] remoteOffset, long[] localAddress, long[] destinationOffset, long[] length) {
    int count() {
        return length.length;
    }

    /**
     * The GETs that copy {@code ranges} of a checkpoint of {@code total} bytes into {@code capacity} bytes of memory at
     * {@code base} (host or GPU), in chunks of at most {@code chunk} bytes.
     */
    static ReadPlan of(String what, long total, List<ByteRange> ranges, long base, long capacity, long chunk) {
        long count = 0;
        for (ByteRange r : ranges) {
            if (r == null) {
                throw new ViperConfigException("ucx read of " + what + ": null byte range");
            }
            if (r.length() > total - r.sourceOffset() || r.sourceOffset() > total) {
                throw new ViperConfigException("ucx read of " + what + ": range " + r.sourceOffset() + "+" + r.length()
                        + " exceeds the checkpoint's " + total + " bytes");
            }
            if (r.length() > capacity - r.destinationOffset() || r.destinationOffset() > capacity) {
                throw new ViperConfigException("ucx read of " + what + ": range to " + r.destinationOffset() + "+"
                        + r.length() + " exceeds the destination's " + capacity + " bytes");
            }
            count += (r.length() + chunk - 1) / chunk;
        }
        if (count > Integer.MAX_VALUE - 8) {
            throw new ViperConfigException(
                    "ucx read of " + what + ": too many chunks; raise " + UcxConfig.CHUNK_BYTES.name());
        }
        int n = (int) count;
        long[] remote = new long[n];
        long[] local = new long[n];
        long[] destination = new long[n];
        long[] length = new long[n];
        int i = 0;
        for (ByteRange r : ranges) {
            for (long done = 0; done < r.length(); done += chunk) {
                remote[i] = r.sourceOffset() + done;
                destination[i] = r.destinationOffset() + done;
                local[i] = base + destination[i];
                length[i] = Math.min(chunk, r.length() - done);
                i++;
            }
        }
        return new ReadPlan(remote, local, destination, length);
    }
}
