package io.viper.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.testing.Ports;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code viper publish} into a PFS that cannot take the version: a small tmpfs that runs out of space (where this test
 * may mount one, as root), else a model directory the producer may not write. The publish fails with one line and exit
 * code 1; readers keep the version before; the next publish, once there is room, stores a newer version that a consumer
 * reads byte-identical. (Each step of a store running out of space is {@code PfsFullIT}, in viper-transfer-pfs.)
 */
class DiskFullIT {
    private static final Duration WAIT = Duration.ofSeconds(90);

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void aFullPfsFailsThePublishInOneLineAndTheNextOneCarriesOn() throws Exception {
        Path pfs = Files.createDirectory(tmp.resolve("pfs"));
        Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", pfs.toString())
                .redirectErrorStream(true)
                .start();
        boolean tmpfs = mount.waitFor(30, TimeUnit.SECONDS) && mount.exitValue() == 0;
        Path a = Fleet.model(tmp.resolve("a.safetensors"), 1L << 20, 31);
        Path big = Fleet.model(tmp.resolve("big.safetensors"), 20L << 20, 32);
        Path c = Fleet.model(tmp.resolve("c.safetensors"), 1L << 20, 33);
        try (Fleet fleet = new Fleet(tmp)) {
            Fleet.Member first = fleet.start(
                    "publish-a",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    a.toString(),
                    "--pfs",
                    pfs.toString(),
                    "--notifier",
                    "embedded://127.0.0.1:0",
                    "--linger",
                    "0");
            long va = first.version(WAIT);
            assertEquals(0, first.exit(WAIT), first.stderr());
            Path modelDir = pfs.resolve("m");
            if (!tmpfs) {
                Files.setPosixFilePermissions(modelDir, PosixFilePermissions.fromString("r-xr-xr-x"));
            }

            Fleet.Member failing = fleet.start(
                    "publish-big",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    (tmpfs ? big : c).toString(),
                    "--pfs",
                    pfs.toString(),
                    "--notifier",
                    "embedded://127.0.0.1:0",
                    "--linger",
                    "0");
            assertEquals(1, failing.exit(WAIT), "an operational failure: " + failing.stderr());
            List<String> lines = failing.stderr()
                    .lines()
                    .filter(l -> l.startsWith("viper: "))
                    .toList();
            assertEquals(1, lines.size(), failing.stderr());
            assertTrue(
                    lines.getFirst().contains(tmpfs ? "No space left on device" : "permission denied"),
                    lines.getFirst());
            assertEquals(
                    va + "\n",
                    Files.readString(modelDir.resolve("LATEST"), StandardCharsets.US_ASCII),
                    "readers keep v" + va);
            System.out.println("fault: " + (tmpfs ? "a full PFS (tmpfs)" : "a PFS the producer may not write")
                    + ": publish exited 1 with: " + lines.getFirst() + "; LATEST still names v" + va);

            if (!tmpfs) {
                Files.setPosixFilePermissions(modelDir, PosixFilePermissions.fromString("rwxr-xr-x"));
            }
            Fleet.Member next = fleet.start(
                    "publish-c",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    c.toString(),
                    "--pfs",
                    pfs.toString(),
                    "--notifier",
                    "embedded://127.0.0.1:0",
                    "--linger",
                    "0");
            long vc = next.version(WAIT);
            assertEquals(0, next.exit(WAIT), next.stderr());
            assertTrue(vc > va, "v" + vc + " follows v" + va);
            try (Stream<Path> entries = Files.list(modelDir)) {
                assertEquals(
                        List.of(),
                        entries.map(p -> p.getFileName().toString())
                                .filter(n -> n.startsWith("."))
                                .toList(),
                        "nothing partial");
            }
            fleet.consumesExactly(
                    c,
                    vc,
                    "--pfs",
                    pfs.toString(),
                    "--paths",
                    "file",
                    "--notifier",
                    "embedded://127.0.0.1:" + Ports.free());
            System.out.println("fault: after the failed publish the next one stored v" + vc
                    + " and a consumer read it from the PFS byte-identical");
        } finally {
            if (tmpfs) {
                new ProcessBuilder("umount", pfs.toString()).inheritIO().start().waitFor(30, TimeUnit.SECONDS);
            }
        }
    }
}
