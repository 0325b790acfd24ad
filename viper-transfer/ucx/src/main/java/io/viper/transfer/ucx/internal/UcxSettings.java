package io.viper.transfer.ucx.internal;

import io.viper.errors.ViperConfigException;
import java.util.Locale;
import java.util.Map;

/**
 * The settings of the ucx transport, parsed from {@code viper.*} configuration keys. Immutable.
 *
 * @param transferTimeoutMs bound on one whole read (lease, RDMA GETs, release) on the consumer; on the
 *                          producer, how long a control connection may stay silent before it is closed
 *                          (and its leases with it)
 * @param chunkBytes        largest single RDMA GET; larger ranges are split
 * @param inFlight          how many GETs one read keeps outstanding at once
 * @param copyToUcxMemory   producer: serve a copy of each exposed checkpoint in memory allocated by UCX
 *                          (shared memory), instead of registering the staging buffer in place
 * @param rkeyCache         consumer: unpacked remote keys kept per producer for reads of the same version
 */
public record UcxSettings(long transferTimeoutMs, long chunkBytes, int inFlight, boolean copyToUcxMemory, int rkeyCache) {
    /** Bound on one read on the consumer; on the producer, the idle limit of a control connection. */
    public static final String TIMEOUT_KEY = "viper.transfer.timeout.ms";
    /** Largest single RDMA GET in bytes. */
    public static final String CHUNK_KEY = "viper.ucx.chunk.bytes";
    /** GETs kept outstanding per read. */
    public static final String IN_FLIGHT_KEY = "viper.ucx.inflight";
    /**
     * Producer: copy each exposed checkpoint into memory allocated by UCX (default true). UCX 1.13
     * reads such memory between processes on one host at memcpy speed; memory the application
     * allocated and registered is read through UCX's software RMA emulation, about 20 times slower.
     * Costs one copy at expose and the checkpoint's size again in shared memory per exposed version.
     */
    public static final String COPY_KEY = "viper.ucx.copy";
    /**
     * Consumer: remote keys kept unpacked per producer (default 4, 0 for none). Unpacking attaches the
     * producer's shared memory and the first touch of each page faults, so a repeated read of the same
     * version is several times faster with its key cached; each cached key keeps that memory attached
     * (alive) until it is evicted, idle for 30 s, or the client closes.
     */
    public static final String RKEY_CACHE_KEY = "viper.ucx.rkey.cache";

    static final long DEFAULT_TIMEOUT_MS = 60_000;
    static final long DEFAULT_CHUNK_BYTES = 64L << 20;
    static final int DEFAULT_IN_FLIGHT = 4;

    /** Parses the keys above from {@code config}; absent keys take their defaults. */
    public static UcxSettings from(Map<String, String> config) {
        if (config == null) {
            throw new ViperConfigException("ucx transport: configuration map is null");
        }
        long timeout = parseLong(config, TIMEOUT_KEY, DEFAULT_TIMEOUT_MS, 1, 24L * 3600 * 1000);
        long chunk = parseLong(config, CHUNK_KEY, DEFAULT_CHUNK_BYTES, 4096, 1L << 40);
        int inFlight = (int) parseLong(config, IN_FLIGHT_KEY, DEFAULT_IN_FLIGHT, 1, 1024);
        boolean copy = parseBoolean(config, COPY_KEY, true);
        int rkeys = (int) parseLong(config, RKEY_CACHE_KEY, 4, 0, 64);
        return new UcxSettings(timeout, chunk, inFlight, copy, rkeys);
    }

    /** Connect timeout of the control channel: the transfer timeout, at most 10 s. */
    public long connectTimeoutMs() {
        return Math.min(transferTimeoutMs, 10_000);
    }

    private static boolean parseBoolean(Map<String, String> config, String key, boolean dflt) {
        String raw = config.get(key);
        if (raw == null) {
            return dflt;
        }
        return switch (raw.strip().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new ViperConfigException("config key " + key + ": '" + raw + "' is not true or false");
        };
    }

    private static long parseLong(Map<String, String> config, String key, long dflt, long min, long max) {
        String raw = config.get(key);
        if (raw == null) {
            return dflt;
        }
        long value;
        try {
            value = Long.parseLong(raw.strip());
        } catch (NumberFormatException e) {
            throw new ViperConfigException("config key " + key + ": '" + raw + "' is not an integer");
        }
        if (value < min || value > max) {
            throw new ViperConfigException("config key " + key + ": " + value + " is out of range [" + min + ", " + max + "]");
        }
        return value;
    }
}
