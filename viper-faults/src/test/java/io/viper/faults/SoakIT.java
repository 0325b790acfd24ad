package io.viper.faults;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 39's case 10, resident memory that crept under load: a producer publishing a model every 0.5 s and followers
 * taking every version, each JVM with native memory tracking, sampled through the run: resident set
 * ({@code /proc/PID/status}) and what the JVM committed ({@code jcmd PID VM.native_memory summary}: in all, and the
 * Java heap's share). It prints the figures and fails when, after the first third of the run, the memory the JVM
 * committed outside its heap grows by more than 32 MiB in any process. The default run is short
 * ({@code viper.soak.seconds}, 45); {@code mvn -Psoak} runs 30 minutes of a 64 MiB model.
 */
class SoakIT {
    private static final long SECONDS = Long.getLong("viper.soak.seconds", 45);
    private static final long BYTES = Long.getLong("viper.soak.bytes", 8L << 20);
    private static final int FOLLOWERS = Integer.getInteger("viper.soak.followers", 2);
    private static final long NON_HEAP_GROWTH = 32L << 20;
    private static final Pattern COMMITTED = Pattern.compile("committed=(\\d+)KB");
    private static final Pattern RSS = Pattern.compile("VmRSS:\\s+(\\d+) kB");

    @TempDir
    Path tmp;

    /** One sample of one process, in bytes. */
    private record Sample(long seconds, long rss, long committed, long heap) {}

    @Test
    void case10NativeMemoryIsFlatAfterTheFirstMinutes() throws Exception {
        List<String> nmt = List.of("-XX:NativeMemoryTracking=summary");
        String withSoak = Fleet.CLASS_PATH
                + File.pathSeparator
                + Path.of(SoakProducer.class
                        .getProtectionDomain()
                        .getCodeSource()
                        .getLocation()
                        .toURI());
        try (Fleet fleet = new Fleet(tmp)) {
            List<Fleet.Member> jvms = new ArrayList<>();
            Fleet.Member producer = fleet.startJvm(
                    "soak-producer",
                    nmt,
                    withSoak,
                    SoakProducer.class.getName(),
                    "embedded://127.0.0.1:0",
                    Long.toString(BYTES),
                    "500",
                    Long.toString(SECONDS));
            String notifier = producer.line(Duration.ofSeconds(60)).substring("NOTIFIER ".length());
            jvms.add(producer);
            for (int i = 0; i < FOLLOWERS; i++) {
                jvms.add(fleet.startJvm(
                        "soak-follower-" + i,
                        nmt,
                        Fleet.CLASS_PATH,
                        "io.viper.cli.ViperMain",
                        "consume",
                        "--model",
                        "m",
                        "--notifier",
                        notifier,
                        "--paths",
                        "tcp"));
            }
            long every = Math.max(5, SECONDS / 15);
            List<List<Sample>> samples = new ArrayList<>();
            jvms.forEach(j -> samples.add(new ArrayList<>()));
            long start = System.nanoTime();
            while (producer.process.isAlive()) {
                long t = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
                for (int i = 0; i < jvms.size(); i++) {
                    Sample s = sample(jvms.get(i).process.pid(), t);
                    if (s != null) {
                        samples.get(i).add(s);
                    }
                }
                producer.process.waitFor(every, TimeUnit.SECONDS);
            }
            int published = (int) producer.lines.stream()
                    .filter(l -> l.startsWith("published"))
                    .count();
            List<String> problems = new ArrayList<>();
            for (int i = 0; i < jvms.size(); i++) {
                Fleet.Member j = jvms.get(i);
                List<Sample> s = samples.get(i);
                s.forEach(x -> System.out.printf(
                        Locale.ROOT,
                        "soak: %s t=%ds rss=%.1f MiB committed=%.1f MiB heap=%.1f MiB non-heap=%.1f MiB%n",
                        j.name,
                        x.seconds,
                        mib(x.rss),
                        mib(x.committed),
                        mib(x.heap),
                        mib(x.committed - x.heap)));
                List<Sample> settled =
                        s.stream().filter(x -> x.seconds >= SECONDS / 3).toList();
                if (settled.size() < 2) {
                    problems.add(j.name + ": too few samples after the first third (" + settled.size() + ")");
                    continue;
                }
                Sample first = settled.getFirst();
                Sample last = settled.getLast();
                long growth = (last.committed - last.heap) - (first.committed - first.heap);
                System.out.printf(
                        Locale.ROOT,
                        "soak: %s from t=%ds to t=%ds: rss %+.1f MiB, committed %+.1f MiB (heap %+.1f, non-heap %+.1f);"
                                + " whole run rss %+.1f MiB, non-heap %+.1f MiB%n",
                        j.name,
                        first.seconds,
                        last.seconds,
                        mib(last.rss - first.rss),
                        mib(last.committed - first.committed),
                        mib(last.heap - first.heap),
                        mib(growth),
                        mib(last.rss - s.getFirst().rss),
                        mib((last.committed - last.heap) - (s.getFirst().committed - s.getFirst().heap)));
                if (growth > NON_HEAP_GROWTH) {
                    problems.add(j.name + ": non-heap memory grew by " + mib(growth) + " MiB after the first third");
                }
            }
            System.out.println("soak: " + published + " versions of " + BYTES + " bytes in " + SECONDS + " s, "
                    + FOLLOWERS + " followers");
            assertTrue(published > 0, "the producer published: " + producer.stderr());
            for (int i = 1; i < jvms.size(); i++) {
                assertTrue(
                        jvms.get(i).process.isAlive(),
                        jvms.get(i).name + " died: " + jvms.get(i).stderr());
                assertTrue(
                        !jvms.get(i).lines.isEmpty(),
                        jvms.get(i).name + " took no version: " + jvms.get(i).stderr());
            }
            assertTrue(problems.isEmpty(), String.join("; ", problems));
        }
    }

    private static double mib(long bytes) {
        return bytes / 1048576.0;
    }

    /** RSS and what the JVM committed, from {@code /proc} and {@code jcmd}; null once the process is gone. */
    private static Sample sample(long pid, long seconds) throws IOException, InterruptedException {
        Path status = Path.of("/proc", Long.toString(pid), "status");
        if (!Files.exists(status)) {
            return null;
        }
        Matcher rss = RSS.matcher(Files.readString(status));
        Path jcmd =
                Path.of(ProcessHandle.current().info().command().orElseThrow()).resolveSibling("jcmd");
        Process p = new ProcessBuilder(jcmd.toString(), Long.toString(pid), "VM.native_memory", "summary")
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(30, TimeUnit.SECONDS);
        long committed = -1;
        long heap = -1;
        for (String line : out.split("\n")) {
            Matcher m = COMMITTED.matcher(line);
            if (line.startsWith("Total:") && m.find()) {
                committed = Long.parseLong(m.group(1)) << 10;
            } else if (line.contains("Java Heap (") && m.find()) {
                heap = Long.parseLong(m.group(1)) << 10;
            }
        }
        if (!rss.find() || committed < 0 || heap < 0) {
            return null; // starting or ending
        }
        return new Sample(seconds, Long.parseLong(rss.group(1)) << 10, committed, heap);
    }
}
