package io.viper.transfer.ucx;

import io.viper.config.ConfigKey;
import io.viper.config.ConfigType;
import java.net.InetAddress;
import java.util.List;

/**
 * The configuration keys of the UCX transports ({@code ucx://} and {@code ucx-cuda://}), declared once and returned by
 * both providers' {@code configKeys()}. The transfer timeout is core's
 * {@link io.viper.ViperConfig#TRANSFER_TIMEOUT_MS}: on the consumer it bounds one whole read (lease, GETs, release); on
 * the producer, how long a control connection may stay silent before it and its leases are closed.
 */
public final class UcxConfig {
    private static final ConfigKey.Declarer UCX = ConfigKey.declaredBy("viper-transfer-ucx");

    /**
     * Largest single RDMA GET; larger ranges are split. Each completed GET is verified while the next ones run, so
     * smaller GETs start verification sooner.
     */
    public static final ConfigKey<Long> CHUNK_BYTES = UCX.sizeKey(
            "viper.ucx.chunk.bytes",
            "1m",
            4096,
            1L << 40,
            "Consumer: largest single RDMA GET (k, m, g suffixes); larger ranges are split, and each GET is verified"
                    + " as soon as it completes."
                    + " GETs read producers on other hosts, and on this one with viper.ucx.mapped=false.");
    /** GETs one read keeps outstanding at once. */
    public static final ConfigKey<Integer> IN_FLIGHT = UCX.intKey(
            "viper.ucx.inflight",
            4,
            1,
            1024,
            "Consumer: RDMA GETs one read keeps outstanding at once (see viper.ucx.chunk.bytes for when reads use"
                    + " GETs).");
    /**
     * Producer: serve a copy of each exposed checkpoint in memory allocated by UCX. UCX 1.13 reads such memory between
     * processes on one host at memcpy speed; memory the application allocated and registered is read through UCX's
     * software RMA emulation, about 20 times slower. Costs one copy at expose and the checkpoint's size again in shared
     * memory per exposed version.
     */
    public static final ConfigKey<Boolean> COPY = UCX.booleanKey(
            "viper.ucx.copy",
            true,
            "Producer: serve a copy of each checkpoint in memory UCX allocated (read between processes at memcpy speed)"
                    + " instead of registering the staging buffer in place (about 20 times slower); costs one copy"
                    + " and the checkpoint's size in shared memory.");
    /**
     * Consumer: remote keys kept unpacked per producer (0 for none). Unpacking attaches the producer's shared memory
     * and the first touch of each page faults, so a repeated read of the same version is several times faster with its
     * key cached; each cached key keeps that memory attached until it is evicted, idle for 30 s, or the client closes.
     */
    public static final ConfigKey<Integer> RKEY_CACHE = UCX.intKey(
            "viper.ucx.rkey.cache",
            4,
            0,
            64,
            "Consumer: unpacked remote keys kept per producer (0: none), so that repeated reads of one version skip"
                    + " re-attaching its memory.");

    /**
     * Consumer: reads of at most this many bytes come back inline on the control connection, in the reply to the lease,
     * instead of through an RDMA GET: one round trip, without waking the UCX progress thread (UCX's own eager protocol,
     * for the same reason).
     */
    public static final ConfigKey<Long> INLINE_BYTES = UCX.sizeKey(
            "viper.ucx.inline.bytes",
            "64k",
            0,
            1L << 20,
            "Consumer: reads of at most this many bytes (0: none) come back in the reply on the control connection,"
                    + " one round trip"
                    + " without an RDMA GET (k, m suffixes; at most 1m).");

    /**
     * Consumer: a producer on the same host serves memory UCX shared with it; UCX maps it into the consumer
     * ({@code ucp_rkey_ptr}) and the consumer copies from it in 8 MiB pieces, verifying each as it lands. UCX 1.13's
     * own GETs of that memory ran at about half a memcpy's speed here.
     */
    public static final ConfigKey<Boolean> MAPPED = UCX.booleanKey(
            "viper.ucx.mapped",
            true,
            "Consumer: read a producer on this host by copying from its memory as UCX maps it here (ucp_rkey_ptr), at"
                    + " memcpy speed, rather"
                    + " than by RDMA GETs (about half that speed between processes here). Producers on other hosts"
                    + " are always read by GETs.");

    /**
     * Consumer: the address whose network interface the consumer's UCX context uses. UCX's TCP transport opens a
     * listener on every device a context uses (every interface unless told), and a consumer needs none beyond the ones
     * that reach its producers: loopback by default, as a producer bound to loopback does.
     */
    public static final ConfigKey<InetAddress> CONSUMER_BIND = UCX.key(
            "viper.ucx.consumer.bind",
            ConfigType.STRING,
            "127.0.0.1",
            InetAddress::ofLiteral,
            "Consumer: an IP address whose interface this consumer's UCX worker uses and listens on (its TCP"
                    + " transport opens a listener per interface); 127.0.0.1 reaches producers on this host only."
                    + " Set an address of the interface that reaches producers on other hosts, or 0.0.0.0 for every"
                    + " interface.");

    /** Every key above, in order. */
    public static final List<ConfigKey<?>> KEYS =
            List.of(CHUNK_BYTES, IN_FLIGHT, COPY, RKEY_CACHE, INLINE_BYTES, MAPPED, CONSUMER_BIND);

    private UcxConfig() {}
}
