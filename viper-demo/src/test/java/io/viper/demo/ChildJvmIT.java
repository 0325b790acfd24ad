package io.viper.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@link ChildJvm} driving a small JVM of its own ({@link Echo}): lines, commands, exits, timeouts. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ChildJvmIT {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    /**
     * The child: says hello, echoes each line of stdin as {@code got LINE}; {@code exit N} logs a line to stderr and
     * exits with N.
     */
    public static final class Echo {
        public static void main(String[] args) throws Exception {
            System.out.println("noise before");
            System.out.println("hello " + String.join(",", args));
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.startsWith("exit ")) {
                    System.err.println("Exception: asked to exit");
                    System.err.println("goodbye");
                    System.exit(Integer.parseInt(line.substring(5)));
                }
                System.out.println("got " + line);
                System.out.flush();
            }
        }
    }

    private static List<String> echo(String... args) {
        return ChildJvm.command(List.of("-Xmx64m"), Echo.class.getName(), List.of(args));
    }

    @Test
    void linesAreAwaitedByPrefixAndCommandsReachTheChild() throws Exception {
        try (ChildJvm child = ChildJvm.start("echo", echo("a", "b"), Optional.of(dir.resolve("echo.log")))) {
            assertEquals("hello a,b", child.awaitLine("hello ", WAIT), "the lines before it are skipped");
            child.send("one");
            child.send("two");
            assertEquals("got two", child.awaitLine("got two", WAIT));
            assertTrue(child.isAlive());
            child.finish(WAIT); // stdin closed: the child's loop ends
            assertTrue(child.awaitDrained(WAIT));
            assertTrue(!child.isAlive());
        }
    }

    @Test
    void aChildThatExitsFirstIsReportedWithItsStatusAndLog() throws Exception {
        Path log = dir.resolve("echo.log");
        try (ChildJvm child = ChildJvm.start("the echo child", echo(), Optional.of(log))) {
            child.awaitLine("hello", WAIT);
            child.send("exit 3");
            ViperException e = assertThrows(ViperException.class, () -> child.awaitLine("never", WAIT));
            assertEquals(ViperException.Reason.INTERNAL, e.reason());
            assertEquals(
                    "the echo child exited with status 3 before printing 'never': " + "Exception: asked to exit (log: "
                            + log + ")",
                    e.getMessage());
        }
    }

    @Test
    void waitingEndsAtTheTimeout() throws Exception {
        try (ChildJvm child = ChildJvm.start("echo", echo(), Optional.of(dir.resolve("echo.log")))) {
            child.awaitLine("hello", WAIT);
            ViperTimeoutException e =
                    assertThrows(ViperTimeoutException.class, () -> child.awaitLine("never", Duration.ofMillis(300)));
            assertTrue(e.getMessage().startsWith("echo printed no 'never' within 0 s"), e.getMessage());
            assertTrue(child.isAlive());
        }
    }

    @Test
    void aHandlerTakesEveryLineOnTheReaderThread() throws Exception {
        BlockingQueue<String> seen = new LinkedBlockingQueue<>();
        try (ChildJvm child = ChildJvm.start("echo", echo("x"), Optional.empty(), seen::add)) {
            assertEquals("noise before", seen.poll(60, TimeUnit.SECONDS));
            assertEquals("hello x", seen.poll(60, TimeUnit.SECONDS));
            child.send("ping");
            assertEquals("got ping", seen.poll(60, TimeUnit.SECONDS));
        }
    }
}
