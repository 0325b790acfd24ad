package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.CheckpointPolicy;
import io.viper.PublishHandle;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperProducer;
import io.viper.manifest.Manifest;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import io.viper.spi.Providers;
import io.viper.testing.TestData;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The failures a probe of the CLI found, each pinned to one line {@code viper: ...} on stderr, no usage, no Java class
 * names, and its exit code: 2 for refused input, 1 for an operational failure.
 */
class ProbeFailuresTest {
    /** Opening a FIFO for reading blocks until a writer comes; a refusal must not get that far. */
    private static final Duration NO_HANG = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    /** Runs {@code args} in-process and checks the one line and the code; returns the line without "viper: ". */
    static String fails(int code, String... args) {
        InspectCommandTest.Run r = InspectCommandTest.run(args);
        assertEquals(code, r.exit(), String.join(" ", args) + " -> " + r.err());
        List<String> lines = r.errLines();
        assertEquals(1, lines.size(), "one line: " + r.err());
        String line = lines.getFirst();
        assertTrue(line.startsWith("viper: "), line);
        assertFalse(line.contains("Usage:"), line);
        assertFalse(
                line.matches(".*\\b(java|javax|sun|picocli)\\.[a-z]+\\..*") || line.contains("Exception"),
                "no Java class names: " + line);
        assertEquals("", r.out());
        return line.substring("viper: ".length());
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "''", "' '", "-1ms", "-5s", "5x", "ms", "1.5.2s", "soon",
            })
    void aBadDurationIsOneLineNamingTheFlagAndTheForm(String value) {
        // The file does not exist: reaching the command would say so instead, so the value is refused first.
        Path file = dir.resolve("never-read.safetensors");
        String line = fails(2, "publish", "--model", "m", "--file", file.toString(), "--linger", value);
        assertTrue(
                line.startsWith("Invalid value for option '--linger': '" + value
                        + "' is not a duration (a non-negative number of ms, s, m or h, e.g. 500ms"),
                line);
        assertTrue(line.endsWith("(see 'viper publish --help')"), line);
        String timeout = fails(2, "consume", "--model", "m", "--timeout", value);
        assertTrue(
                timeout.startsWith("Invalid value for option '--timeout': '" + value + "' is not a duration"), timeout);
    }

    @Test
    void aDurationTooLongForTheClockIsOneLineAndExitTwo() {
        // publish --timeout 99999999999999999999999h failed with "viper: long overflow", exit 1.
        Path file = dir.resolve("never-read.safetensors");
        String value = "99999999999999999999999h";
        String line = fails(2, "publish", "--model", "m", "--file", file.toString(), "--timeout", value);
        assertEquals(
                "Invalid value for option '--timeout': '" + value
                        + "' is too long a duration (at most 876000h, 100 years)" + " (see 'viper publish --help')",
                line);
        assertTrue(fails(2, "consume", "--model", "m", "--timeout", "876001h").contains("is too long a duration"));
        assertEquals(Duration.ofHours(Durations.MAX_HOURS), Durations.parse("876000h"));
    }

    @Test
    void durationsThatAreFine() {
        assertEquals(Duration.ZERO, Durations.parse("0"));
        assertEquals(Duration.ofMillis(1500), Durations.parse("1.5"));
        assertEquals(Duration.ofMillis(500), Durations.parse("500ms"));
        assertEquals(Duration.ofMinutes(5), Durations.parse(" 5M "));
        assertEquals(Duration.ofMillis(250), Durations.parse(".25s"));
        assertEquals(Duration.ofHours(1), Durations.parse("1h"));
    }

    @Test
    void durationsInMessagesAreInMillisecondsUnderASecond() {
        // publish --timeout 500ms failed with "announcing took longer than 0 s"
        assertEquals("0 ms", Durations.words(Duration.ZERO));
        assertEquals("500 ms", Durations.words(Duration.ofMillis(500)));
        assertEquals("999 ms", Durations.words(Duration.ofNanos(999_999_999)));
        assertEquals("1 s", Durations.words(Duration.ofSeconds(1)));
        assertEquals("1.5 s", Durations.words(Duration.ofMillis(1500)), "not 1 s");
        assertEquals("60.001 s", Durations.words(Duration.ofMillis(60_001)));
        assertEquals("3600 s", Durations.words(Duration.ofHours(1)));
        assertEquals(
                "no update of m within 300 ms",
                fails(
                        ViperMain.EXIT_NO_UPDATE,
                        "consume",
                        "--model",
                        "m",
                        "--notifier",
                        "embedded://127.0.0.1:1",
                        "--timeout",
                        "300ms"));
    }

    @Test
    void unknownFlagsAndMissingOnesAreOneLineWithAHint() {
        assertEquals(
                "Unknown option: '--bogus' (see 'viper inspect --help')",
                fails(2, "inspect", "--bogus", "x.safetensors"));
        assertEquals("Missing required option: '--model=NAME' (see 'viper consume --help')", fails(2, "consume"));
    }

    @Test
    void aFifoIsRefusedByInspectAndPublishWithoutOpeningIt() throws Exception {
        Path fifo = dir.resolve("pipe.safetensors");
        assertEquals(
                0,
                new ProcessBuilder("mkfifo", fifo.toString())
                        .inheritIO()
                        .start()
                        .waitFor(),
                "mkfifo");
        String expected = fifo + ": is not a regular file (a pipe, socket or device), not a safetensors file";
        assertTimeoutPreemptively(NO_HANG, () -> {
            assertEquals(expected, fails(2, "inspect", fifo.toString()));
            assertEquals(expected, fails(2, "inspect", "--json", "--stats", fifo.toString()));
            assertEquals(
                    expected,
                    fails(
                            2,
                            "publish",
                            "--model",
                            "m",
                            "--file",
                            fifo.toString(),
                            "--notifier",
                            "embedded://127.0.0.1:0"));
        });
    }

    @Test
    void aTensorsPatternThatIsNotAGlobIsRefused() {
        String line = fails(2, "consume", "--model", "m", "--tensors", "[", "--notifier", "embedded://127.0.0.1:1");
        assertTrue(line.startsWith("--tensors '[' is not a glob: "), line);
    }

    @Test
    void anEmptyTensorsPatternIsRefusedBeforeTheOutDirectoryIsMade() {
        // It matched no tensor, and consume waited out --timeout for versions it could never take (exit 3).
        Path out = dir.resolve("not-made");
        assertEquals(
                "--tensors is empty: give a glob of tensor names (e.g. 'dense.*'), or leave it out for the whole model",
                fails(
                        2,
                        "consume",
                        "--model",
                        "m",
                        "--tensors",
                        "",
                        "--out",
                        out.toString(),
                        "--timeout",
                        "1s",
                        "--notifier",
                        "embedded://127.0.0.1:1"));
        assertFalse(Files.exists(out), "no directory made for a refused command");
    }

    @Test
    void anOutThatIsAFileIsRefused() throws Exception {
        Path file = Files.writeString(dir.resolve("taken"), "not a directory");
        assertEquals(
                "--out " + file + ": not a directory",
                fails(2, "consume", "--model", "m", "--out", file.toString(), "--notifier", "embedded://127.0.0.1:1"));
        Path below = file.resolve("sub");
        String line =
                fails(2, "consume", "--model", "m", "--out", below.toString(), "--notifier", "embedded://127.0.0.1:1");
        assertTrue(line.startsWith("--out " + below + ": not a directory"), line);
        assertEquals("not a directory", Files.readString(file), "left alone");
    }

    /** A new secret written by {@code viper secret} to {@code file} in the test's directory. */
    private Path secret(String file) {
        Path p = dir.resolve(file);
        assertEquals(0, InspectCommandTest.run("secret", "--out", p.toString()).exit());
        return p;
    }

    @Test
    void aPathBelowAFileIsRefusedInput() throws Exception {
        // secret --out FILE/x exited 1 with "Not a directory": the JDK's ENOTDIR is a plain FileSystemException
        Path file = Files.writeString(dir.resolve("file"), "not a directory");
        Path below = file.resolve("x");
        assertEquals("a parent is not a directory: " + below, fails(2, "secret", "--out", below.toString()));
        assertEquals("not a directory", Files.readString(file), "left alone");
    }

    @Test
    void aBadFromFileIsNamedByTheFlag() throws Exception {
        // secret --consumer --from FILE named the key viper.auth.secret.file, which the user never gave
        Path missing = dir.resolve("missing.secret");
        assertEquals(
                "--from " + missing + ": no such file", fails(2, "secret", "--consumer", "--from", missing.toString()));
        Path shortOne = Files.writeString(dir.resolve("short.secret"), "short");
        Files.setPosixFilePermissions(shortOne, PosixFilePermissions.fromString("rw-------"));
        assertTrue(fails(2, "secret", "--consumer", "--from", shortOne.toString())
                .startsWith("--from " + shortOne + ": the secret has 5 characters"));
    }

    @Test
    void aConsumerTheBrokerRefusesExitsTwoRatherThanWaitingForAnUpdate() throws Exception {
        // with the wrong secret, consume retried until --timeout and exited 3 as if no update came
        Path mine = secret("mine.secret");
        Path other = secret("other.secret");
        try (Viper producerSide = Viper.builder()
                        .notifier("embedded://127.0.0.1:0")
                        .transports("tcp://127.0.0.1:0")
                        .config("viper.auth.secret.file", mine.toString())
                        .build();
                ViperProducer producer = producerSide.producer("guarded", CheckpointPolicy.never())) {
            String notifier = producerSide.notifierUri().toString();
            String wrong = assertTimeoutPreemptively(
                    NO_HANG,
                    () -> fails(
                            2,
                            "consume",
                            "--model",
                            "guarded",
                            "--timeout",
                            "50s",
                            "--notifier",
                            notifier,
                            "--set",
                            "viper.auth.secret.file=" + other));
            assertEquals(
                    "notifier " + notifier + ": " + notifier + " refused this client: authentication failed", wrong);
            String none = assertTimeoutPreemptively(
                    NO_HANG,
                    () -> fails(
                            2,
                            "consume",
                            "--model",
                            "guarded",
                            "--timeout",
                            "50s",
                            "--notifier",
                            notifier,
                            "--set",
                            "viper.auth.user.secret=off"));
            assertTrue(none.endsWith(notifier + " requires credentials: set viper.auth.secret.file"), none);
        }
    }

    @Test
    void publishsTimeoutBoundsTheNotifiersWaits() throws Exception {
        // publish --timeout 5s to a Kafka that is not there waited 30 s for the newest version, then 30 s more
        assertEquals(
                30_000,
                CommonOptions.notifyTimeoutMs(Duration.ofSeconds(60), Map.of()),
                "the default --timeout leaves the default");
        assertEquals(2_500, CommonOptions.notifyTimeoutMs(Duration.ofSeconds(5), Map.of()));
        assertEquals(
                2_000, CommonOptions.notifyTimeoutMs(Duration.ofSeconds(5), Map.of("viper.notify.timeout.ms", "2000")));
        assertEquals(1, CommonOptions.notifyTimeoutMs(Duration.ZERO, Map.of()));
        Path model = TestData.root().resolve("safetensors").resolve("small_f32.safetensors");
        String line = assertTimeoutPreemptively(
                NO_HANG,
                () -> fails(
                        1,
                        "publish",
                        "--model",
                        "m",
                        "--file",
                        model.toString(),
                        "--linger",
                        "0",
                        "--notifier",
                        "kafka://127.0.0.1:1",
                        "--timeout",
                        "2s"));
        // the announcement fails as the time is up: either may be the line
        assertTrue(
                line.equals("publishing m: announcing took longer than 2 s")
                        || line.startsWith("Kafka at 127.0.0.1:1 "),
                line);
    }

    @Test
    void aConsumerAProducerRefusesExitsTwoNamingTheProducer() throws Exception {
        // the broker let the consumer in but the producer's tcp:// port refused its secret: consume retried that for
        // ever
        Path mine = secret("mine.secret");
        Path other = secret("other.secret");
        ViperConfig withMine = ViperConfig.of(Map.of("viper.auth.secret.file", mine.toString()));
        try (Notifier broker = Providers.notifier("embedded")
                        .open(URI.create("embedded://127.0.0.1:0"), NotifierProvider.Role.PRODUCER, withMine);
                Viper producerSide = Viper.builder()
                        .notifier("embedded://127.0.0.1:0")
                        .transports("tcp://127.0.0.1:0")
                        .config("viper.auth.secret.file", other.toString())
                        .config("viper.producer.inline.bytes", "0")
                        .build();
                ViperProducer producer = producerSide.producer("elsewhere", CheckpointPolicy.never())) {
            Manifest m = producer.publish(
                            sink -> sink.addFloats("w", new long[] {4}, new float[] {1, 2, 3, 4}), Map.of())
                    .announced()
                    .get(60, TimeUnit.SECONDS);
            broker.publish(m); // announced where the consumer's secret is good, as by a producer of both deployments
            URI at = m.locations().getFirst().uri();
            String line = assertTimeoutPreemptively(
                    NO_HANG,
                    () -> fails(
                            2,
                            "consume",
                            "--model",
                            "elsewhere",
                            "--timeout",
                            "50s",
                            "--notifier",
                            broker.uri().toString(),
                            "--set",
                            "viper.auth.secret.file=" + mine));
            assertEquals(
                    "tcp read of elsewhere v1 from " + at + ": " + at + " refused this client: authentication failed",
                    line);
        }
    }

    @Test
    void consumesTimeoutBoundsTheNotifiersWaits() {
        // consume --timeout under 5 s to a Kafka that is not there said only that no update came: its
        // follower waited 5 s for the cluster's metadata before it warned that Kafka is unreachable
        List<String> warnings = new CopyOnWriteArrayList<>();
        Logger kafka = Logger.getLogger("io.viper.notify.kafka");
        Handler h = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
                    warnings.add(new SimpleFormatter().formatMessage(r));
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        kafka.addHandler(h);
        try {
            InspectCommandTest.Run r = assertTimeoutPreemptively(
                    NO_HANG,
                    () -> InspectCommandTest.run(
                            "consume", "--model", "m", "--notifier", "kafka://127.0.0.1:1", "--timeout", "4s"));
            assertEquals(ViperMain.EXIT_NO_UPDATE, r.exit(), r.err());
            assertEquals(List.of("viper: no update of m within 4 s"), r.errLines());
            assertTrue(
                    warnings.stream()
                            .anyMatch(w ->
                                    w.startsWith("Kafka at 127.0.0.1:1 is unreachable (no metadata within 2000 ms)")),
                    "the notifier said why before --timeout ended: " + warnings);
        } finally {
            kafka.removeHandler(h);
        }
    }

    @Test
    void aFullDiskWhileWritingOutIsAnOperationalFailure() throws Exception {
        // --out on a small tmpfs filled to the last byte (root, as CI runs), where every write fails with ENOSPC;
        // elsewhere a directory the consumer may not write into, which fails the same way but says why.
        // (A link to /dev/full no longer stands for a full disk: consume --out replaces a link, never writes through
        // it.)
        Path out = Files.createDirectories(dir.resolve("out"));
        boolean tmpfs = mountFullTmpfs(out);
        if (!tmpfs) {
            Files.setPosixFilePermissions(out, PosixFilePermissions.fromString("r-xr-xr-x"));
        }
        try (Viper producerSide = Viper.builder()
                        .notifier("embedded://127.0.0.1:0")
                        .transports("tcp://127.0.0.1:0")
                        .build();
                ViperProducer producer = producerSide.producer("full", CheckpointPolicy.never())) {
            PublishHandle h =
                    producer.publish(sink -> sink.addFloats("w", new long[] {4}, new float[] {1, 2, 3, 4}), Map.of());
            h.announced().get(60, TimeUnit.SECONDS);
            String line = assertTimeoutPreemptively(
                    NO_HANG,
                    () -> fails(
                            1,
                            "consume",
                            "--model",
                            "full",
                            "--once",
                            "--timeout",
                            "50s",
                            "--out",
                            out.toString(),
                            "--notifier",
                            producerSide.notifierUri().toString()));
            assertTrue(line.startsWith(out.resolve("full-v1.safetensors") + ": cannot write: "), line);
            assertTrue(line.contains(tmpfs ? "No space left on device" : "Permission denied"), line);
        } finally {
            if (tmpfs) {
                new ProcessBuilder("umount", out.toString()).start().waitFor(30, TimeUnit.SECONDS);
            } else {
                Files.setPosixFilePermissions(out, PosixFilePermissions.fromString("rwxr-xr-x"));
            }
        }
    }

    /** Mounts a 64 KiB tmpfs on {@code dir} and fills it; false where this process may not mount. */
    private static boolean mountFullTmpfs(Path dir) throws IOException, InterruptedException {
        Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir.toString())
                .redirectErrorStream(true)
                .start();
        if (!mount.waitFor(30, TimeUnit.SECONDS) || mount.exitValue() != 0) {
            return false;
        }
        try (OutputStream filler = Files.newOutputStream(dir.resolve("filler"))) {
            byte[] block = new byte[4096];
            while (true) {
                filler.write(block);
                filler.flush();
            }
        } catch (IOException full) {
            // the tmpfs is full: what the consumer's write meets
        }
        return true;
    }
}
