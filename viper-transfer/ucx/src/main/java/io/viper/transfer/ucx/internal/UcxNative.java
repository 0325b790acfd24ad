package io.viper.transfer.ucx.internal;

import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.Optional;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpParams;

/**
 * Probes, once per JVM, whether jucx's native library and UCX's {@code libucp} load and a UCP context with the features
 * this transport needs can be created. The result is cached; nothing native is touched before the first call to
 * {@link #unavailableReason()}.
 */
public final class UcxNative {
    private static final System.Logger LOG = System.getLogger(UcxNative.class.getName());
    private static volatile Optional<String> reason;

    private UcxNative() {}

    /** Empty when UCX works in this process; otherwise one line saying why not. Thread-safe. */
    public static Optional<String> unavailableReason() {
        Optional<String> r = reason;
        if (r == null) {
            synchronized (UcxNative.class) {
                r = reason;
                if (r == null) {
                    r = probe();
                    reason = r;
                }
            }
        }
        return r;
    }

    /**
     * The UCP parameters every context of this transport uses: RMA and wake-up. The first call also removes the
     * directories jucx unpacked its library into for processes that were killed ({@link JucxLeftovers}).
     */
    public static UcpParams contextParams() {
        JucxLeftovers.removeOnce();
        return new UcpParams().requestRmaFeature().requestWakeupFeature();
    }

    /**
     * The parameters of a producer's context whose control channel binds {@code bind}, or of a consumer's whose
     * {@code viper.ucx.consumer.bind} is {@code bind}: UCX's own network listeners (its TCP transport listens on every
     * interface by default) are kept to the interface of that address, so that a loopback one is reachable from this
     * host only. A wildcard address leaves every interface.
     */
    public static UcpParams serverParams(InetAddress bind) {
        UcpParams params = contextParams();
        if (bind.isAnyLocalAddress()) {
            return params;
        }
        try {
            NetworkInterface nic = NetworkInterface.getByInetAddress(bind);
            if (nic != null) {
                params.setConfig("NET_DEVICES", nic.getName());
            }
        } catch (SocketException e) {
            LOG.log(Level.DEBUG, "no interface found for " + bind + "; UCX listens on every one", e);
        }
        return params;
    }

    private static Optional<String> probe() {
        try {
            new UcpContext(contextParams()).close();
            return Optional.empty();
        } catch (LinkageError | RuntimeException e) {
            // UnsatisfiedLinkError, or ExceptionInInitializerError/NoClassDefFoundError from jucx's static loader.
            LOG.log(Level.DEBUG, "UCX probe failed", e);
            return Optional.of(describe(e));
        }
    }

    /** The one-line reason for a failed probe. */
    static String describe(Throwable e) {
        String detail = rootMessage(e);
        if (e instanceof LinkageError) {
            for (String lib : new String[] {"libucp.so.0", "libuct.so.0", "libucs.so.0", "libucm.so.0"}) {
                if (detail.contains(lib)) {
                    return "UCX libraries not found (" + lib + "): install libucx0";
                }
            }
            return "UCX native library did not load: " + oneLine(detail);
        }
        return "UCX could not create a context: " + oneLine(detail);
    }

    private static String rootMessage(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t.getMessage() != null) {
                if (!sb.isEmpty()) {
                    sb.append(": ");
                }
                sb.append(t.getMessage());
            }
        }
        return sb.isEmpty() ? e.getClass().getSimpleName() : sb.toString();
    }

    static String oneLine(String s) {
        String line = s.replaceAll("\\s+", " ").strip();
        return line.length() > 300 ? line.substring(0, 300) + "..." : line;
    }
}
