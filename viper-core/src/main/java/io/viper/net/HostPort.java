package io.viper.net;

import io.viper.errors.ViperConfigException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.util.Locale;

/**
 * The host and port of a {@code scheme://host:port} URI, the address form every socket-based transport and notifier
 * uses for binding and for locations. Immutable; thread-safe.
 *
 * @param host a host name or address literal; an IPv6 literal without its brackets
 * @param port 0 to 65535 (0 only where {@link #parse} allowed it: bind to any free port)
 */
public record HostPort(String host, int port) {
    /** Checks the fields; {@link #parse} is the way in from a URI. */
    public HostPort {
        if (host == null || host.isEmpty()) {
            throw new ViperConfigException("host must not be empty");
        }
        if (port < 0 || port > 65_535) {
            throw new ViperConfigException("port " + port + " is out of range 0-65535");
        }
    }

    /**
     * Parses and checks {@code uri}: scheme {@code scheme} (any case), a host, a port in 1-65535 (0-65535 when
     * {@code allowZeroPort}: a bind address whose port 0 picks a free one), and nothing else (no user, path, query or
     * fragment; not even a trailing {@code /}). Every refusal is a {@link ViperConfigException} of one line that quotes
     * the URI and says what form was expected.
     */
    public static HostPort parse(URI uri, String scheme, boolean allowZeroPort) {
        String expected =
                " (expected " + scheme + "://host:port" + (allowZeroPort ? "; port 0 picks a free one)" : ")");
        if (uri == null) {
            throw new ViperConfigException(scheme + ":// URI is missing" + expected);
        }
        String quoted = "'" + uri + "'";
        if (uri.getScheme() == null || !uri.getScheme().toLowerCase(Locale.ROOT).equals(scheme)) {
            throw new ViperConfigException(quoted + " is not a " + scheme + ":// URI" + expected);
        }
        if (uri.isOpaque() || uri.getHost() == null || uri.getHost().isEmpty()) {
            throw new ViperConfigException(quoted + noHost(uri, allowZeroPort) + expected);
        }
        if (uri.getRawUserInfo() != null
                || uri.getRawQuery() != null
                || uri.getRawFragment() != null
                || (uri.getRawPath() != null && !uri.getRawPath().isEmpty())) {
            throw new ViperConfigException(quoted + " has a user, path, query or fragment" + expected);
        }
        int port = uri.getPort();
        if (port < 0) {
            throw new ViperConfigException(quoted + " has no port" + expected);
        }
        if (port > 65_535 || (port == 0 && !allowZeroPort)) {
            throw new ViperConfigException(quoted + " has port " + port + " out of range " + (allowZeroPort ? "0" : "1")
                    + "-65535" + expected);
        }
        String host = uri.getHost();
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        return new HostPort(host, port);
    }

    /**
     * Why {@code uri} has no host: {@link URI} finds none when any part of the authority is not well-formed (a port
     * {@code -1} or {@code x} as much as a host {@code a_b}), so the part at fault is named here.
     */
    private static String noHost(URI uri, boolean allowZeroPort) {
        String authority = uri.isOpaque() ? null : uri.getRawAuthority();
        if (authority == null || authority.isEmpty()) {
            return " has no host";
        }
        int colon = authority.lastIndexOf(':');
        if (colon > 0 && colon > authority.lastIndexOf(']')) {
            String port = authority.substring(colon + 1);
            if (port.matches("-?[0-9]+")) {
                return port.startsWith("-")
                        ? " has port " + port + " out of range " + (allowZeroPort ? "0" : "1") + "-65535"
                        : " has no valid host name ('" + authority.substring(0, colon) + "')";
            }
            return port.isEmpty() ? " has no port" : " has port '" + port + "', which is not a number";
        }
        return colon == 0 ? " has no host" : " has no valid host name ('" + authority + "')";
    }

    /** The socket address with the host looked up now (to bind, or to connect at once); an unknown host is refused. */
    public InetSocketAddress resolve() {
        try {
            return new InetSocketAddress(InetAddress.getByName(host), port);
        } catch (UnknownHostException e) {
            throw new ViperConfigException("unknown host " + host + " in " + this);
        }
    }

    /** The socket address with the lookup left to the connect. */
    public InetSocketAddress unresolved() {
        return InetSocketAddress.createUnresolved(host, port);
    }

    /** The same host with another port (the one a server bound when asked for port 0). */
    public HostPort withPort(int boundPort) {
        return new HostPort(host, boundPort);
    }

    /**
     * Where peers on other hosts reach a server bound here: a wildcard host ({@code 0.0.0.0}, {@code ::}) is replaced
     * by this machine's address, other hosts stay as given.
     */
    public HostPort advertised() {
        try {
            if (InetAddress.getByName(host).isAnyLocalAddress()) {
                return new HostPort(localAddress(), port);
            }
        } catch (UnknownHostException e) {
            // Keep the name as given: peers may resolve it where this host cannot.
        }
        return this;
    }

    /** {@code scheme://host:port}, with brackets around an IPv6 literal. */
    public URI uri(String scheme) {
        try {
            return new URI(scheme, null, host, port, null, null, null);
        } catch (URISyntaxException e) {
            throw new ViperConfigException("cannot form a " + scheme + ":// URI for " + this + ": " + e.getReason());
        }
    }

    /** {@code host:port}, with brackets around an IPv6 literal. */
    @Override
    public String toString() {
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }

    private static String localAddress() {
        try {
            return InetAddress.getLocalHost().getHostAddress();
        } catch (UnknownHostException e) {
            return InetAddress.getLoopbackAddress().getHostAddress();
        }
    }
}
