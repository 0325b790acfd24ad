package io.viper.testing;

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
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The TCP sockets this process listens on, read from Linux's {@code /proc/net/tcp} and
 * {@code /proc/net/tcp6} (the sockets of every process, matched to this one's by the inodes its
 * file descriptors name). Tests use it to prove where a server listens, including listeners a
 * native library opens behind Java's back.
 */
public final class ListeningSockets {
    private static final Pattern SOCKET_LINK = Pattern.compile("socket:\\[(\\d+)]");
    private static final String LISTEN = "0A";

    private ListeningSockets() {
    }

    /** Whether this machine offers the files read here (Linux). */
    public static boolean available() {
        return Files.isReadable(Path.of("/proc/net/tcp")) && Files.isDirectory(Path.of("/proc/self/fd"));
    }

    /** Every socket address this process listens on now. */
    public static List<InetSocketAddress> ofThisProcess() throws IOException {
        Set<String> inodes = new HashSet<>();
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path fd : fds) {
                try {
                    Matcher m = SOCKET_LINK.matcher(Files.readSymbolicLink(fd).toString());
                    if (m.matches()) {
                        inodes.add(m.group(1));
                    }
                } catch (IOException gone) {
                    // closed meanwhile
                }
            }
        }
        List<InetSocketAddress> out = new ArrayList<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path p = Path.of(table);
            if (!Files.isReadable(p)) {
                continue;
            }
            List<String> lines = Files.readAllLines(p);
            for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 9 && f[3].equals(LISTEN) && inodes.contains(f[9])) {
                    out.add(address(f[1]));
                }
            }
        }
        return out;
    }

    /** {@code 0100007F:1F90} (little-endian words of hex) as an address. */
    static InetSocketAddress address(String hexHostPort) throws UnknownHostException {
        String[] hp = hexHostPort.split(":");
        String hex = hp[0];
        byte[] raw = new byte[hex.length() / 2];
        // Each 4-byte word is in host (little-endian) order.
        for (int word = 0; word < raw.length / 4; word++) {
            for (int b = 0; b < 4; b++) {
                int at = word * 8 + (3 - b) * 2;
                raw[word * 4 + b] = (byte) Integer.parseInt(hex.substring(at, at + 2), 16);
            }
        }
        return new InetSocketAddress(InetAddress.getByAddress(raw), Integer.parseInt(hp[1], 16));
    }
}
