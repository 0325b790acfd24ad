package io.viper.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.testing.Ports;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Symbolic links planted where Viper writes (issue 39, case 6), as another user who can write into a shared directory
 * would: in {@code consume --out}'s directory, to a file and to a directory outside it, and as a PFS model directory.
 * Nothing is written through a link: {@code consume} replaces the links with the files it writes, {@code publish}
 * refuses the linked model directory in one line with exit code 2, and what the links point to stays as it was.
 */
class LinksIT {
    private static final Duration WAIT = Duration.ofSeconds(90);

    @TempDir
    Path tmp;

    private static List<String> entries(Path d) throws IOException {
        try (Stream<Path> s = Files.list(d)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static String[] publish(Path file, Path pfs) {
        return new String[] {
            "publish",
            "--model",
            "m",
            "--file",
            file.toString(),
            "--pfs",
            pfs.toString(),
            "--notifier",
            "embedded://127.0.0.1:0",
            "--linger",
            "0"
        };
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void consumeOutReplacesPlantedLinksAndNeverWritesThroughThem() throws Exception {
        Path pfs = Files.createDirectory(tmp.resolve("pfs"));
        Path out = Files.createDirectory(tmp.resolve("out"));
        Path outside = Files.createDirectory(tmp.resolve("outside"));
        Path victim = Files.writeString(outside.resolve("victim"), "precious", StandardCharsets.US_ASCII);
        Path a = Fleet.model(tmp.resolve("a.safetensors"), 1L << 20, 61);
        try (Fleet fleet = new Fleet(tmp)) {
            Fleet.Member p = fleet.start("publish", publish(a, pfs));
            long v = p.version(WAIT);
            assertEquals(0, p.exit(WAIT), p.stderr());
            for (Path target : List.of(victim, outside)) {
                Path planted = out.resolve("m-v" + v + ".safetensors");
                Files.deleteIfExists(planted);
                Files.createSymbolicLink(planted, target);
                Fleet.Member c = fleet.start(
                        "consume",
                        "consume",
                        "--model",
                        "m",
                        "--once",
                        "--out",
                        out.toString(),
                        "--timeout",
                        "60s",
                        "--pfs",
                        pfs.toString(),
                        "--paths",
                        "file",
                        "--notifier",
                        "embedded://127.0.0.1:" + Ports.free());
                assertEquals(0, c.exit(WAIT), c.stderr());
                assertTrue(Files.isRegularFile(planted, LinkOption.NOFOLLOW_LINKS), "the link was replaced");
                Fleet.assertSameTensors(a, planted);
                assertEquals(
                        "precious", Files.readString(victim, StandardCharsets.US_ASCII), "the target is untouched");
                assertEquals(List.of("victim"), entries(outside), "nothing written into the linked directory");
                System.out.println("fault: consume --out with " + planted.getFileName() + " planted as a link to "
                        + target + ": the link was replaced, the target untouched");
            }
        }
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void publishRefusesALinkedModelDirectoryInOneLine() throws Exception {
        Path pfs = Files.createDirectory(tmp.resolve("pfs"));
        Path outside = Files.createDirectory(tmp.resolve("outside"));
        Files.createSymbolicLink(pfs.resolve("m"), outside);
        Path a = Fleet.model(tmp.resolve("a.safetensors"), 1L << 20, 62);
        try (Fleet fleet = new Fleet(tmp)) {
            Fleet.Member p = fleet.start("publish", publish(a, pfs));
            assertEquals(2, p.exit(WAIT), "refused input: " + p.stderr());
            List<String> lines =
                    p.stderr().lines().filter(l -> l.startsWith("viper: ")).toList();
            assertEquals(1, lines.size(), p.stderr());
            assertTrue(lines.getFirst().contains("symbolic link"), lines.getFirst());
            assertEquals(List.of(), entries(outside), "nothing written where the link points");
            System.out.println("fault: publish --pfs into a linked model directory: " + lines.getFirst());
        }
    }
}
