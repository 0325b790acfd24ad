package io.viper.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.transfer.ucx.UcxTransportProvider;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a process killed with SIGKILL leaves on the machine (issue 39, case 9): jucx unpacks its native library into a
 * new {@code /tmp/jucx*} directory in every process that loads UCX, and only a normal exit removes it. A producer
 * serving over ucx is killed; the next process that loads UCX removes the directory the killed one left, and its own
 * goes when it exits.
 */
class LeftoversIT {
    private static final Duration WAIT = Duration.ofSeconds(90);

    @TempDir
    Path tmp;

    /** The jucx directory process {@code pid} loaded its library from, read from its memory map. */
    private static Optional<Path> jucxDirectoryOf(long pid) {
        String maps;
        try {
            maps = Files.readString(Path.of("/proc", Long.toString(pid), "maps"), StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            return Optional.empty(); // it has exited already
        }
        return maps.lines()
                .filter(l -> l.endsWith("/libjucx.so"))
                .map(l -> Path.of(l.substring(l.indexOf('/'))).getParent())
                .findFirst();
    }

    private static String[] publishOverUcx(Path file, String linger) {
        return new String[] {
            "publish",
            "--model",
            "m",
            "--file",
            file.toString(),
            "--transports",
            "ucx://127.0.0.1:0",
            "--notifier",
            "embedded://127.0.0.1:0",
            "--linger",
            linger
        };
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void theNextProcessRemovesWhatAKilledOneLeftInTmp() throws Exception {
        var reason = new UcxTransportProvider().unavailableReason();
        Assumptions.assumeTrue(reason.isEmpty(), () -> "ucx unavailable: " + reason.orElse(""));
        Path a = Fleet.model(tmp.resolve("a.safetensors"), 1L << 20, 91);
        try (Fleet fleet = new Fleet(tmp)) {
            Fleet.Member killed = fleet.start("publish-killed", publishOverUcx(a, "5m"));
            killed.version(WAIT); // serving over ucx: jucx is loaded
            Path left = jucxDirectoryOf(killed.process.pid())
                    .orElseThrow(() -> new AssertionError(
                            "the producer serving over ucx maps no libjucx.so; stderr: " + killed.stderr()));
            killed.kill();
            assertTrue(Files.isDirectory(left), "SIGKILL left " + left);
            // A directory is looked at only once it is a minute old (its process may not have loaded it yet): the
            // minute passes here by moving its time back.
            Files.setLastModifiedTime(left, FileTime.from(Instant.now().minus(Duration.ofMinutes(2))));

            Fleet.Member next = fleet.start("publish-next", publishOverUcx(a, "0"));
            next.version(WAIT);
            Optional<Path> own = jucxDirectoryOf(next.process.pid());
            assertEquals(0, next.exit(WAIT), next.stderr());
            assertFalse(Files.exists(left), "the next process that loaded UCX removed " + left);
            own.ifPresent(d -> assertFalse(Files.exists(d), "a normal exit removes its own " + d));
            System.out.println("fault: a producer killed with SIGKILL left " + left
                    + "; the next process that loaded UCX removed it, and its own went with its exit");
        }
    }
}
