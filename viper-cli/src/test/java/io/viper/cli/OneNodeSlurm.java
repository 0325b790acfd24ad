package io.viper.cli;

import io.viper.testing.Ports;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A real one-node Slurm cluster of Debian's {@code slurm-wlm} and {@code munge}, for the tests of {@code deploy/slurm}:
 * {@code munged} on a socket of its own, {@code slurmctld} and {@code slurmd} from a generated {@code slurm.conf} in
 * {@code dir}, on free ports, with one partition holding this host. Commands run with {@code SLURM_CONF} pointing at
 * it. {@link #close()} shuts the daemons down. Needs root (slurmd runs jobs as their user); {@link #missing()} says why
 * a machine cannot run one.
 */
final class OneNodeSlurm implements AutoCloseable {
    private static final List<String> BINARIES =
            List.of("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue");

    private final Path dir;
    private final String node;

    private OneNodeSlurm(Path dir, String node) {
        this.dir = dir;
        this.node = node;
    }

    /** Why no cluster can start here (a binary missing, not root), or empty. */
    static Optional<String> missing() {
        for (String b : BINARIES) {
            if (!onPath(b)) {
                return Optional.of(b + " is not installed (apt-get install slurm-wlm munge; scripts/setup-system.sh"
                        + " does as root)");
            }
        }
        if (!"root".equals(System.getProperty("user.name"))) {
            return Optional.of(
                    "slurmd must run as root to start jobs, and this test runs as " + System.getProperty("user.name"));
        }
        return Optional.empty();
    }

    private static boolean onPath(String binary) {
        for (String d :
                System.getenv().getOrDefault("PATH", "/usr/bin:/usr/sbin").split(":")) {
            if (Files.isExecutable(Path.of(d, binary))) {
                return true;
            }
        }
        return Files.isExecutable(Path.of("/usr/sbin", binary));
    }

    /** Starts munged, slurmctld and slurmd under {@code dir} and waits until the node is idle. */
    static OneNodeSlurm start(Path dir) throws IOException, InterruptedException {
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        String node = InetAddress.getLocalHost().getHostName().split("\\.")[0];
        OneNodeSlurm s = new OneNodeSlurm(dir, node);
        try {
            byte[] key = new byte[1024];
            new SecureRandom().nextBytes(key);
            Path keyFile = dir.resolve("munge.key");
            Files.write(keyFile, key);
            Files.setPosixFilePermissions(keyFile, PosixFilePermissions.fromString("rw-------"));
            s.run(
                    Duration.ofSeconds(30),
                    sbin("munged"),
                    "--force",
                    "--socket=" + dir.resolve("munge.sock"),
                    "--key-file=" + keyFile,
                    "--log-file=" + dir.resolve("munged.log"),
                    "--pid-file=" + dir.resolve("munged.pid"),
                    "--seed-file=" + dir.resolve("munged.seed"));
            Files.createDirectories(dir.resolve("state"));
            Files.createDirectories(dir.resolve("spool"));
            int ctld = Ports.free();
            int slurmd = Ports.free();
            Files.writeString(
                    s.conf(),
                    String.join(
                            "\n",
                            "ClusterName=viperit",
                            "SlurmctldHost=" + node + "(127.0.0.1)",
                            "SlurmUser=root",
                            "SlurmdUser=root",
                            "SlurmctldPort=" + ctld,
                            "SlurmdPort=" + slurmd,
                            "AuthType=auth/munge",
                            "CredType=cred/munge",
                            "AuthInfo=socket=" + dir.resolve("munge.sock"),
                            "StateSaveLocation=" + dir.resolve("state"),
                            "SlurmdSpoolDir=" + dir.resolve("spool"),
                            "SlurmctldPidFile=" + dir.resolve("slurmctld.pid"),
                            "SlurmdPidFile=" + dir.resolve("slurmd.pid"),
                            "SlurmctldLogFile=" + dir.resolve("slurmctld.log"),
                            "SlurmdLogFile=" + dir.resolve("slurmd.log"),
                            // No cgroups in a container: processes tracked by parentage, no task binding.
                            "ProctrackType=proctrack/linuxproc",
                            "TaskPlugin=task/none",
                            "SchedulerType=sched/backfill",
                            "SelectType=select/cons_tres",
                            "SelectTypeParameters=CR_Core",
                            "ReturnToService=2",
                            "MpiDefault=none",
                            "KillWait=30",
                            "JobCompType=jobcomp/none",
                            "AccountingStorageType=accounting_storage/none",
                            "JobAcctGatherType=jobacct_gather/none",
                            "SwitchType=switch/none",
                            "NodeName=" + node + " NodeAddr=127.0.0.1 CPUs="
                                    + Runtime.getRuntime().availableProcessors() + " State=UNKNOWN",
                            "PartitionName=it Nodes=" + node + " Default=YES MaxTime=INFINITE State=UP",
                            ""));
            s.run(Duration.ofSeconds(30), sbin("slurmctld"), "-f", s.conf().toString());
            s.run(Duration.ofSeconds(30), sbin("slurmd"), "-f", s.conf().toString());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            String state = "";
            while (System.nanoTime() < deadline) {
                state = s.output(Duration.ofSeconds(10), "sinfo", "-h", "-o", "%t")
                        .strip();
                if (state.equals("idle")) {
                    return s;
                }
                Thread.sleep(500);
            }
            throw new IOException("the Slurm node did not become idle (" + state + "); logs in " + dir);
        } catch (IOException | InterruptedException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    private static String sbin(String name) {
        return Files.isExecutable(Path.of("/usr/sbin", name)) ? "/usr/sbin/" + name : name;
    }

    Path conf() {
        return dir.resolve("slurm.conf");
    }

    /** This host's node name, the one the jobs run on. */
    String node() {
        return node;
    }

    /** A process for {@code command} with this cluster's {@code SLURM_CONF}. */
    ProcessBuilder command(String... command) {
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().put("SLURM_CONF", conf().toString());
        return pb;
    }

    /** Runs {@code command} to its end; fails on a non-zero exit, with its output. */
    void run(Duration timeout, String... command) throws IOException, InterruptedException {
        output(timeout, command);
    }

    /** Runs {@code command} to its end and returns its output (stdout and stderr). */
    String output(Duration timeout, String... command) throws IOException, InterruptedException {
        Process p = command(command).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(timeout.toSeconds(), TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException(String.join(" ", command) + " did not finish in " + timeout);
        }
        String text = new String(out, StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " exited with " + p.exitValue() + ": " + text);
        }
        return text;
    }

    /** The jobs Slurm still knows (pending, running, completing), one id per entry. */
    List<String> jobs() throws IOException, InterruptedException {
        List<String> ids = new ArrayList<>();
        output(Duration.ofSeconds(10), "squeue", "-h", "-o", "%i %T")
                .lines()
                .filter(l -> !l.isBlank())
                .forEach(ids::add);
        return ids;
    }

    /**
     * Waits until job {@code id} ended; returns its {@code JobState=... ExitCode=...}. A job still pending or running
     * at the deadline is cancelled and reported with its state and reason.
     */
    String awaitEnd(String id, Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        String state = "";
        while (System.nanoTime() < deadline) {
            state = output(Duration.ofSeconds(10), "scontrol", "-o", "show", "job", id);
            if (!state.matches("(?s).*JobState=(PENDING|RUNNING|COMPLETING|CONFIGURING|SUSPENDED).*")) {
                return field(state, "JobState") + " " + field(state, "ExitCode");
            }
            Thread.sleep(1000);
        }
        cancelAll();
        throw new AssertionError("job " + id + " did not end in " + timeout + ": " + field(state, "JobState") + " "
                + field(state, "Reason") + " (cancelled)");
    }

    private static String field(String scontrol, String name) {
        for (String f : scontrol.split("\\s+")) {
            if (f.startsWith(name + "=")) {
                return f;
            }
        }
        return name + "=?";
    }

    /** Cancels every job of the cluster's partition (after a test, so that none outlives it). */
    void cancelAll() throws IOException, InterruptedException {
        run(Duration.ofSeconds(30), "scancel", "--partition=it");
    }

    /** Stops slurmd, slurmctld and munged. */
    @Override
    public void close() {
        try {
            if (Files.exists(conf())) {
                command("scontrol", "shutdown")
                        .redirectErrorStream(true)
                        .start()
                        .waitFor(30, TimeUnit.SECONDS);
            }
            Thread.sleep(1000);
            for (String pidFile : List.of("slurmd.pid", "slurmctld.pid", "munged.pid")) {
                Path f = dir.resolve(pidFile);
                if (Files.exists(f)) {
                    long pid = Long.parseLong(Files.readString(f).strip());
                    ProcessHandle.of(pid).ifPresent(ProcessHandle::destroy);
                }
            }
        } catch (IOException | InterruptedException | NumberFormatException e) {
            // best effort: the daemons' pid files are in the temporary directory
        }
    }
}
