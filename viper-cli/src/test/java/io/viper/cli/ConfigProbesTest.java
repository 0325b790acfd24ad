package io.viper.cli;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.cli.InspectCommandTest.Run;
import io.viper.format.SafetensorsWriter;
import io.viper.tensor.Tensor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad configuration reaching {@code publish} and {@code consume} is refused before anything starts: exit 2 and one line
 * {@code viper: ...} on stderr naming the problem, no stack trace.
 */
class ConfigProbesTest {
    @TempDir
    Path dir;

    private Path model;

    @BeforeEach
    void writeModel() {
        model = dir.resolve("m.safetensors");
        try (Arena arena = Arena.ofConfined()) {
            SafetensorsWriter.write(
                    model, List.of(Tensor.ofFloats("w", new long[] {2}, new float[] {1, 2}, arena)), Map.of());
        }
    }

    /** {@code publish} of a valid model with {@code extra} flags; the notifier port is free so nothing collides. */
    private Run publish(String... extra) {
        List<String> args = new ArrayList<>(List.of("--notifier", "embedded://127.0.0.1:0"));
        args.addAll(List.of(extra));
        return publishNamingNoNotifier(args.toArray(String[]::new));
    }

    /** {@code publish} of a valid model with {@code extra} flags, which name the notifier where they need one. */
    private Run publishNamingNoNotifier(String... extra) {
        List<String> args =
                new ArrayList<>(List.of("publish", "--model", "m", "--file", model.toString(), "--linger", "0"));
        args.addAll(List.of(extra));
        return InspectCommandTest.run(args.toArray(String[]::new));
    }

    private static void assertRefused(Run r, String expectedStart) {
        assertEquals(2, r.exit(), r.err());
        assertEquals(1, r.errLines().size(), "one line: " + r.err());
        assertTrue(r.err().startsWith("viper: " + expectedStart), r.err());
        assertTrue(!r.err().contains("Exception") && !r.err().contains("\tat "), r.err());
    }

    @Test
    void theConfigFilesNotifierIsUsedUnlessTheFlagNamesOne() throws IOException {
        // The --notifier flag's default (embedded://127.0.0.1:7800) was applied over the file's viper.notifier,
        // which publish, consume and agent then ignored without a word: its bad value here went unnoticed.
        Path file = Files.writeString(dir.resolve("viper.properties"), "viper.notifier=broker-host\n");
        assertRefused(
                publishNamingNoNotifier("--config", file.toString()),
                "invalid value 'broker-host' for viper.notifier: 'broker-host' is not a URI with a scheme");
        assertRefused(
                InspectCommandTest.run("consume", "--model", "m", "--timeout", "1s", "--config", file.toString()),
                "invalid value 'broker-host' for viper.notifier");
        assertEquals(
                "embedded://127.0.0.1:0",
                CommonOptions.notifierUri("embedded://127.0.0.1:0", Map.of("viper.notifier", "broker-host")),
                "the flag over the file");
        assertEquals(CommonOptions.DEFAULT_NOTIFIER, CommonOptions.notifierUri(null, Map.of()));
    }

    @Test
    void aFlagAndASetOfItsKeyThatDisagreeAreRefused() {
        // One silently won: --set viper.pfs.root over --pfs, but --transports over --set viper.transports.
        Path a = dir.resolve("pfs-a");
        Path b = dir.resolve("pfs-b");
        assertRefused(
                publish("--pfs", a.toString(), "--set", "viper.pfs.root=" + b),
                "--pfs " + a + " and --set viper.pfs.root=" + b + " disagree: give one of them");
        assertRefused(
                publish("--set", "viper.notifier=embedded://127.0.0.1:1"),
                "--notifier embedded://127.0.0.1:0 and --set viper.notifier=embedded://127.0.0.1:1 disagree: give one"
                        + " of them");
        assertRefused(
                publish("--transports", "tcp://127.0.0.1:0", "--set", "viper.transports=ucx://127.0.0.1:0"),
                "--transports tcp://127.0.0.1:0 and --set viper.transports=ucx://127.0.0.1:0 disagree: give one of"
                        + " them");
        assertRefused(
                InspectCommandTest.run(
                        "consume",
                        "--model",
                        "m",
                        "--timeout",
                        "1s",
                        "--paths",
                        "tcp",
                        "--set",
                        "viper.consumer.paths=ucx"),
                "--paths tcp and --set viper.consumer.paths=ucx disagree: give one of them");
        assertFalse(Files.exists(a) || Files.exists(b), "nothing was created");
    }

    @Test
    void aMisspeltPluginKeyNamesTheKeyItMeant() {
        assertRefused(
                publish("--set", "viper.ucx.inflght=8"),
                "unknown configuration key viper.ucx.inflght (did you mean viper.ucx.inflight?)");
    }

    @Test
    void aBadPluginValueIsRefusedBeforeAnyServerOpens() {
        assertRefused(
                publish("--set", "viper.ucx.inflight=0"),
                "invalid value '0' for viper.ucx.inflight: must be at least 1");
    }

    @Test
    void anEmptyKeyIsRefused() {
        assertRefused(publish("--set", "=x"), "empty configuration key (with value 'x')");
    }

    @Test
    void aKeyOutsideViperAndKafkaIsRefused() {
        assertRefused(
                publish("--set", "foo.bar=1"),
                "configuration key 'foo.bar' is neither a viper.* key nor a passthrough kafka.<setting> key");
    }

    @Test
    void aConfigFileOfBinaryGarbageIsRefusedNamingFileAndLine() throws IOException {
        Path garbage = Files.write(
                dir.resolve("garbage.properties"),
                new byte[] {'v', 'i', '=', '1', '\n', 0, 1, 2, (byte) 0xff, (byte) 0xfe});
        assertRefused(publish("--config", garbage.toString()), "config file " + garbage + ", line 2: ");
        Path nul = Files.write(
                dir.resolve("nul.properties"), "viper.pfs.retention=3\nviper.hash.threads=2\0\n".getBytes(UTF_8));
        assertRefused(publish("--config", nul.toString()), "config file " + nul + ", line 2: control character U+0000");
        Path prose = Files.writeString(
                dir.resolve("prose.properties"), "# settings\nviper.pfs.retention=3\nthis is not a setting\n");
        assertRefused(
                publish("--config", prose.toString()),
                "config file " + prose + ", line 3: expected key=value, got 'this is not a setting'");
    }

    @Test
    void aConfigFileThatIsADeviceOrTooLargeIsRefusedWithoutReadingIt() throws IOException {
        if (Files.exists(Path.of("/dev/zero"))) {
            assertRefused(publish("--config", "/dev/zero"), "config file /dev/zero is not a regular file");
        }
        Path big = dir.resolve("big.properties");
        Files.writeString(big, ("# " + "x".repeat(1000) + "\n").repeat(1100));
        assertRefused(publish("--config", big.toString()), "config file " + big + " is larger than 1048576 bytes");
        assertRefused(
                publish("--config", dir.resolve("missing.properties").toString()),
                "config file " + dir.resolve("missing.properties") + " does not exist");
    }

    @Test
    void aConfigFileOfGoodSettingsIsUsedAndItsKeysChecked() throws IOException {
        Path typo = Files.writeString(
                dir.resolve("typo.properties"), "# a comment\n\nviper.ucx.copy = false\nviper.kafka.partitons: 2\n");
        assertRefused(
                publish("--config", typo.toString()),
                "unknown configuration key viper.kafka.partitons (did you mean viper.kafka.partitions?)");
    }

    @Test
    void anEmptyTransportListWithoutAPfsIsRefused() {
        assertRefused(
                publish("--transports", ""),
                "viper.transports is empty and viper.pfs.root is not set: no consumer could reach a published model");
    }

    @Test
    void anEmptyTransportEntryIsRefusedNamingItsPosition() {
        // a comma too many was dropped: --transports tcp://127.0.0.1:0, served on tcp alone without a word
        assertRefused(
                publish("--transports", "tcp://127.0.0.1:0,"),
                "invalid value 'tcp://127.0.0.1:0,' for viper.transports: an empty entry at position 2 (a comma too"
                        + " many)");
        assertRefused(
                publish("--set", "viper.transports=tcp://127.0.0.1:0,,ucx://127.0.0.1:0"),
                "invalid value 'tcp://127.0.0.1:0,,ucx://127.0.0.1:0' for viper.transports: an empty entry at"
                        + " position 2 (a comma too many)");
    }

    @Test
    void consumeWithAnUnknownPathNamesTheInstalledOnes() {
        Run r = InspectCommandTest.run(
                "consume", "--model", "m", "--paths", "bogus", "--notifier", "embedded://127.0.0.1:1", "--once");
        assertRefused(
                r, "invalid value 'bogus' for viper.consumer.paths: no bogus:// transport is installed (installed: ");
        assertTrue(r.err().contains("tcp") && r.err().contains("file"), r.err());
    }

    @Test
    void aBadNotifierAddressNamesThePartAtFaultAndAValidExample() {
        // "-1" read "has no host", and the example offered was tcp://127.0.0.1:0, which is no notifier
        assertRefused(
                publishNamingNoNotifier("--set", "viper.notifier=embedded://127.0.0.1:-1"),
                "'embedded://127.0.0.1:-1' has port -1 out of range 0-65535 (expected embedded://host:port; port 0"
                        + " picks a free one)");
        assertRefused(
                publishNamingNoNotifier("--set", "viper.notifier=broker-host"),
                "invalid value 'broker-host' for viper.notifier: 'broker-host' is not a URI with a scheme"
                        + " (e.g. embedded://127.0.0.1:7800 or kafka://host:9092)");
    }

    @Test
    void consumePathsThatCanReachNoVersionAreRefusedAtStart() {
        // --paths file without --pfs warned and retried for ever; an empty list or entry was taken as "any"
        assertRefused(
                InspectCommandTest.run(
                        "consume",
                        "--model",
                        "m",
                        "--paths",
                        "file",
                        "--notifier",
                        "embedded://127.0.0.1:1",
                        "--timeout",
                        "5s"),
                "viper.consumer.paths is file only, but viper.pfs.root is not set: a consumer reads file:// locations"
                        + " only from its own PFS");
        assertRefused(
                InspectCommandTest.run(
                        "consume",
                        "--model",
                        "m",
                        "--paths",
                        "",
                        "--notifier",
                        "embedded://127.0.0.1:1",
                        "--timeout",
                        "5s"),
                "--paths is empty: name the transports this consumer may use");
        assertRefused(
                InspectCommandTest.run(
                        "consume",
                        "--model",
                        "m",
                        "--paths",
                        "tcp,,file",
                        "--notifier",
                        "embedded://127.0.0.1:1",
                        "--timeout",
                        "5s"),
                "invalid value 'tcp,,file' for viper.consumer.paths: an empty entry at position 2 (a comma too many)");
        assertRefused(
                InspectCommandTest.run(
                        "consume",
                        "--model",
                        "m",
                        "--paths",
                        "tcp,",
                        "--notifier",
                        "embedded://127.0.0.1:1",
                        "--timeout",
                        "5s"),
                "invalid value 'tcp,' for viper.consumer.paths: an empty entry");
    }
}
