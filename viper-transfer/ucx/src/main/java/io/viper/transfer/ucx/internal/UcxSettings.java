package io.viper.transfer.ucx.internal;

import io.viper.ViperConfig;
import io.viper.transfer.ucx.UcxConfig;
import java.net.InetAddress;

/**
 * The settings of one UCX server or client, read from a validated {@link ViperConfig} (the keys are declared in
 * {@link UcxConfig}). Immutable.
 *
 * @param transferTimeoutMs bound on one whole read (lease, RDMA GETs, release) on the consumer; on the producer, how
 *     long a control connection may stay silent before it is closed (and its leases with it)
 * @param chunkBytes largest single RDMA GET; larger ranges are split
 * @param inFlight how many GETs one read keeps outstanding at once
 * @param copyToUcxMemory producer: serve a copy of each exposed checkpoint in memory allocated by UCX (shared memory),
 *     instead of registering the staging buffer in place
 * @param rkeyCache consumer: unpacked remote keys kept per producer for reads of the same version
 * @param inlineBytes consumer: reads of at most this many bytes come back on the control connection
 * @param mapped consumer: copy from a producer on this host through its memory mapped by UCX rather than by GETs
 * @param consumerBind consumer: the address whose interface its UCX context uses (loopback by default)
 */
public record UcxSettings(
        long transferTimeoutMs,
        long chunkBytes,
        int inFlight,
        boolean copyToUcxMemory,
        int rkeyCache,
        long inlineBytes,
        boolean mapped,
        InetAddress consumerBind) {
    /** The values of {@code config}. */
    public static UcxSettings from(ViperConfig config) {
        return new UcxSettings(
                config.get(ViperConfig.TRANSFER_TIMEOUT_MS),
                config.get(UcxConfig.CHUNK_BYTES),
                config.get(UcxConfig.IN_FLIGHT),
                config.get(UcxConfig.COPY),
                config.get(UcxConfig.RKEY_CACHE),
                config.get(UcxConfig.INLINE_BYTES),
                config.get(UcxConfig.MAPPED),
                config.get(UcxConfig.CONSUMER_BIND));
    }

    /** Connect timeout of the control channel: the transfer timeout, at most 10 s. */
    public long connectTimeoutMs() {
        return Math.min(transferTimeoutMs, 10_000);
    }
}
