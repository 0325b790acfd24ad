package io.viper.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for a test to hand to a process it starts, which binds them later.
 *
 * <p>They are chosen below the kernel's ephemeral range ({@code net.ipv4.ip_local_port_range}), so that between the
 * check and the bind no other socket of the machine is given one of them for an outgoing connection or a bind to port
 * 0. A port from {@code new ServerSocket(0)} is in that range: a CI run lost a test to it, when the agent's metrics
 * port, two above a free one, went to a connection of the job meanwhile. A port handed out once is not handed out again
 * by this JVM, so that ports asked for one after another, none bound yet, differ. Any thread may call.
 */
public final class Ports {
    /** Above the ports that services commonly listen on (Kafka's 9092, Prometheus' 9090, ...). */
    private static final int LOWEST = 10_000;

    private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

    private Ports() {}

    /** One free port outside the ephemeral range. */
    public static int free() {
        return freeRun(1);
    }

    /**
     * The first of {@code n} consecutive free ports outside the ephemeral range.
     *
     * @throws IllegalArgumentException when {@code n} is not 1 to 100
     * @throws IllegalStateException when 200 random tries found no such run
     */
    public static int freeRun(int n) {
        if (n < 1 || n > 100) {
            throw new IllegalArgumentException("ports in a run: " + n + " (1 to 100)");
        }
        int below = ephemeralLow();
        for (int attempt = 0; attempt < 200; attempt++) {
            int first = ThreadLocalRandom.current().nextInt(LOWEST, below - n + 1);
            if (allBindable(first, n) && handOut(first, n)) {
                return first;
            }
        }
        throw new IllegalStateException("no " + n + " consecutive free ports between " + LOWEST + " and " + below);
    }

    /**
     * The lowest ephemeral port: the first number of {@code /proc/sys/net/ipv4/ip_local_port_range}, else 32768. Read
     * by lines: {@code Files.readString} of it returned only its first byte here (JDK 25, procfs).
     */
    static int ephemeralLow() {
        Path range = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
        int low = 32_768;
        if (Files.isReadable(range)) {
            try {
                low = Integer.parseInt(
                        Files.readAllLines(range).getFirst().strip().split("\\s+")[0]);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        if (low <= LOWEST + 100) {
            throw new IllegalStateException("the ephemeral ports start at " + low + ", too low to pick ports below");
        }
        return low;
    }

    /** Marks the run handed out; false, marking nothing, when a port of it already was. */
    private static synchronized boolean handOut(int first, int n) {
        for (int i = 0; i < n; i++) {
            if (HANDED_OUT.contains(first + i)) {
                return false;
            }
        }
        for (int i = 0; i < n; i++) {
            HANDED_OUT.add(first + i);
        }
        return true;
    }

    private static boolean allBindable(int first, int n) {
        List<ServerSocket> held = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                held.add(new ServerSocket(first + i)); // on every address, as the processes under test bind
            }
            return true;
        } catch (IOException taken) {
            return false;
        } finally {
            for (ServerSocket s : held) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // closing an unused listener: nothing to report
                }
            }
        }
    }
}
