package io.viper.cli.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Where the nodes of {@code viper bench fleet} run: network namespaces joined by a bridge with capped links
 * ({@link Namespaces}, with root and a working {@code ip netns}), else processes on loopback with nothing capped
 * ({@link Loopback}). {@link #close} removes what {@link #open} made; a shutdown hook does it too when the JVM is
 * interrupted (Ctrl-C, SIGTERM). One thread uses it; the hook may run on another.
 */
public sealed interface FleetNetwork extends AutoCloseable permits FleetNetwork.Namespaces, FleetNetwork.Loopback {
    /** The address node {@code i} serves on. */
    String host(int node);

    /** {@code command} as run on node {@code i}. */
    List<String> command(int node, List<String> command);

    /** Bytes node {@code i} has sent on its link so far; empty where there is no link of its own to count. */
    OptionalLong txBytes(int node);

    /** Whether the links are capped at the link rate. */
    boolean capped();

    /** What the network is, for the report. */
    String description();

    @Override
    void close();

    /** Established TCP connections to {@code port} on node {@code i} (counted with {@code ss}). */
    default int connections(int node, int port) {
        String out = run(command(node, List.of("ss", "-Htn", "state", "established", "( sport = :" + port + " )")));
        return (int) out.lines().filter(l -> !l.isBlank()).count();
    }

    /**
     * The namespaces where {@code ip netns} works here, else loopback; {@code progress} hears which and why. Before
     * making the namespaces it removes those an earlier run left (a SIGKILLed bench), with the processes still in them.
     */
    static FleetNetwork open(int consumers, LinkRate rate, Consumer<String> progress) {
        NamespacePlan plan = new NamespacePlan(NamespacePlan.PREFIX, consumers + 1, rate);
        String why = Namespaces.unusable(plan);
        if (why != null) {
            Loopback l = new Loopback(why);
            progress.accept(l.description());
            return l;
        }
        return Namespaces.make(plan, progress);
    }

    /**
     * Runs {@code command} to its end; its output. A failure is an {@link ViperException.Reason#IO} naming the command.
     */
    static String run(List<String> command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new ViperException(
                        ViperException.Reason.IO, String.join(" ", command) + " failed: " + out.strip());
            }
            return out;
        } catch (IOException e) {
            throw new ViperException(ViperException.Reason.IO, String.join(" ", command) + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ViperException(ViperException.Reason.IO, String.join(" ", command) + ": interrupted", e);
        }
    }

    /** Processes on 127.0.0.1: the links are the machine's loopback, not capped. */
    record Loopback(String why) implements FleetNetwork {
        @Override
        public String host(int node) {
            return "127.0.0.1";
        }

        @Override
        public List<String> command(int node, List<String> command) {
            return command;
        }

        @Override
        public OptionalLong txBytes(int node) {
            return OptionalLong.empty();
        }

        @Override
        public boolean capped() {
            return false;
        }

        @Override
        public String description() {
            return "processes on loopback, links NOT capped (no network namespaces: " + why + ")";
        }

        @Override
        public void close() {}
    }

    /**
     * A namespace per node, made from a {@link NamespacePlan}, with one bench at a time on the machine (a lock file).
     */
    final class Namespaces implements FleetNetwork {
        /** Held while the namespaces exist: a second bench would remove the first one's as leftovers. */
        static final Path LOCK = Path.of("/tmp/viper-bench-fleet.lock");

        private final NamespacePlan plan;
        private final FileChannel lockFile;
        private final FileLock lock;
        private final Thread hook;
        private boolean closed;

        private Namespaces(NamespacePlan plan, FileChannel lockFile, FileLock lock) {
            this.plan = plan;
            this.lockFile = lockFile;
            this.lock = lock;
            this.hook = new Thread(this::teardown, "viper-bench-fleet-namespaces");
        }

        /** Why namespaces cannot be used here, or null: a namespace is made and removed to find out. */
        static String unusable(NamespacePlan plan) {
            String probe = plan.prefix() + "probe";
            try {
                run(List.of("tc", "-V"));
                run(List.of("ip", "netns", "add", probe));
                run(List.of("ip", "netns", "del", probe));
                return null;
            } catch (ViperException e) {
                return e.getMessage().lines().findFirst().orElse("ip netns failed");
            }
        }

        static Namespaces make(NamespacePlan plan, Consumer<String> progress) {
            FileChannel ch = null;
            try {
                ch = FileChannel.open(LOCK, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                FileLock lock = ch.tryLock();
                if (lock == null) {
                    throw new ViperConfigException(
                            "another viper bench fleet runs on this machine (it holds " + LOCK + ")");
                }
                Namespaces n = new Namespaces(plan, ch, lock);
                n.removeLeftovers(progress);
                Runtime.getRuntime().addShutdownHook(n.hook);
                try {
                    plan.setup().forEach(FleetNetwork::run);
                } catch (RuntimeException e) {
                    n.close();
                    throw e;
                }
                progress.accept(n.description());
                return n;
            } catch (IOException e) {
                closeQuietly(ch);
                throw new ViperException(ViperException.Reason.IO, LOCK + ": " + e.getMessage(), e);
            } catch (RuntimeException e) {
                closeQuietly(ch);
                throw e;
            }
        }

        private static void closeQuietly(FileChannel ch) {
            try {
                if (ch != null) {
                    ch.close();
                }
            } catch (IOException e) {
                // nothing held
            }
        }

        private void removeLeftovers(Consumer<String> progress) {
            List<String> old = NamespacePlan.leftovers(plan.prefix(), run(List.of("ip", "netns", "list")));
            if (!old.isEmpty()) {
                progress.accept("removing the namespaces an earlier run left: " + String.join(", ", old));
                old.forEach(Namespaces::remove);
            }
        }

        /** Ends the processes in namespace {@code ns} (only the bench's own run in these), then removes it. */
        private static void remove(String ns) {
            try {
                for (String pid : run(List.of("ip", "netns", "pids", ns)).split("\\s+")) {
                    if (!pid.isBlank()) {
                        ProcessHandle.of(Long.parseLong(pid)).ifPresent(ProcessHandle::destroyForcibly);
                    }
                }
            } catch (RuntimeException e) {
                // the namespace is removed below all the same; its processes keep it alive until they end
            }
            run(List.of("ip", "netns", "del", ns));
        }

        /** Removes every namespace of the plan; what fails to go is named on stderr, the rest still goes. */
        private synchronized void teardown() {
            if (closed) {
                return;
            }
            closed = true;
            List<String> left = new ArrayList<>();
            for (List<String> del : plan.teardown()) {
                String ns = del.getLast();
                try {
                    remove(ns);
                } catch (RuntimeException e) {
                    if (!run(List.of("ip", "netns", "list")).contains(ns)) {
                        continue; // never made: setup failed before it
                    }
                    left.add(ns + " (" + e.getMessage() + ")");
                }
            }
            if (!left.isEmpty()) {
                System.err.println("viper: could not remove " + String.join(", ", left));
            }
            try {
                lock.release();
                lockFile.close();
            } catch (IOException e) {
                // released when the process ends
            }
        }

        @Override
        public String host(int node) {
            return plan.address(node);
        }

        @Override
        public List<String> command(int node, List<String> command) {
            return plan.exec(node, command);
        }

        @Override
        public OptionalLong txBytes(int node) {
            try {
                JsonNode link =
                        new ObjectMapper().readTree(run(plan.counters(node))).get(0);
                return OptionalLong.of(
                        link.get("stats64").get("tx").get("bytes").asLong());
            } catch (IOException | RuntimeException e) {
                return OptionalLong.empty();
            }
        }

        @Override
        public boolean capped() {
            return true;
        }

        @Override
        public String description() {
            return plan.nodes() + " nodes in network namespaces (" + plan.prefix()
                    + "*) on a bridge, each link capped at " + plan.rate().text() + " both ways (tc tbf "
                    + String.join(" ", NamespacePlan.TBF) + ")";
        }

        @Override
        public void close() {
            teardown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // the JVM is shutting down: the hook is running or has run
            }
        }
    }
}
