package io.viper.net;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The TCP sockets listening on this host and who owns them, from Linux's {@code /proc/net/tcp} and
 * {@code /proc/net/tcp6}: which user runs a server on a loopback port (so that a consumer trusts an unauthenticated
 * producer only when it is its own user's), and which listeners this process opened (including those a native library
 * opens behind Java's back). Elsewhere than Linux the tables are empty. Stateless.
 */
public final class LocalSockets {
    private static final Pattern SOCKET_LINK = Pattern.compile("socket:\\[(\\d+)]");
    private static final String LISTEN = "0A";

    /** One listening socket: its address, the user that opened it, and its inode. */
    public record Listener(InetSocketAddress address, int uid, String inode) {}

    private LocalSockets() {}

    /** Every TCP socket listening on this host now. */
    public static List<Listener> listening() throws IOException {
        List<Listener> out = new ArrayList<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path p = Path.of(table);
            if (Files.isReadable(p)) {
                out.addAll(parse(Files.readAllLines(p)));
            }
        }
        return out;
    }

    /** The listening entries of one {@code /proc/net/tcp} table (its header line first). */
    static List<Listener> parse(List<String> lines) throws UnknownHostException {
        List<Listener> out = new ArrayList<>();
        for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
            String[] f = line.trim().split("\\s+");
            if (f.length > 9 && f[3].equals(LISTEN)) {
                out.add(new Listener(address(f[1]), Integer.parseInt(f[7]), f[9]));
            }
        }
        return out;
    }

    /**
     * The user listening on {@code port} of {@code address} (or of a wildcard address); empty when no listener is
     * found.
     */
    public static OptionalInt ownerOf(InetAddress address, int port) throws IOException {
        return ownerOf(listening(), address, port);
    }

    static OptionalInt ownerOf(List<Listener> listeners, InetAddress address, int port) {
        for (Listener l : listeners) {
            InetAddress a = l.address().getAddress();
            if (l.address().getPort() == port && (a.equals(address) || a.isAnyLocalAddress())) {
                return OptionalInt.of(l.uid());
            }
        }
        return OptionalInt.empty();
    }

    /**
     * The user of the socket at the far end of this host's TCP connection from {@code local} to {@code remote}: the
     * entry whose own address is {@code remote} and whose peer is {@code local} (an accepted socket carries the user of
     * the listener that accepted it). Unlike {@link #ownerOf}, which a listener that closes and opens again can slip
     * past, it names the process at the other end of this very connection for as long as it is open. Empty when no such
     * entry is found.
     */
    public static OptionalInt ownerOfPeer(InetSocketAddress local, InetSocketAddress remote) throws IOException {
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path p = Path.of(table);
            if (!Files.isReadable(p)) {
                continue;
            }
            List<String> lines = Files.readAllLines(p);
            for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 9
                        && address(f[1]).equals(remote)
                        && address(f[2]).equals(local)) {
                    return OptionalInt.of(Integer.parseInt(f[7]));
                }
            }
        }
        return OptionalInt.empty();
    }

    /** The addresses this process listens on now. */
    public static List<InetSocketAddress> ofThisProcess() throws IOException {
        Set<String> mine = new HashSet<>();
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path fd : fds) {
                try {
                    Matcher m = SOCKET_LINK.matcher(Files.readSymbolicLink(fd).toString());
                    if (m.matches()) {
                        mine.add(m.group(1));
                    }
                } catch (IOException gone) {
                    // closed meanwhile
                }
            }
        }
        return listening().stream()
                .filter(l -> mine.contains(l.inode()))
                .map(Listener::address)
                .toList();
    }

    /** This process's user id, or -1 where {@code /proc} does not say. */
    public static int ownUid() {
        try {
            return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return -1;
        }
    }

    /** {@code 0100007F:1F90} (the address in 4-byte words of host order, then the port, in hex) as an address. */
    static InetSocketAddress address(String hexHostPort) throws UnknownHostException {
        String[] hp = hexHostPort.split(":");
        String hex = hp[0];
        byte[] raw = new byte[hex.length() / 2];
        for (int word = 0; word < raw.length / 4; word++) {
            for (int b = 0; b < 4; b++) {
                int at = word * 8 + (3 - b) * 2;
                raw[word * 4 + b] = (byte) Integer.parseInt(hex.substring(at, at + 2), 16);
            }
        }
        return new InetSocketAddress(InetAddress.getByAddress(raw), Integer.parseInt(hp[1], 16));
    }
}
