package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.Viper;
import io.viper.agent.ViperAgent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code viper agent} refuses what it cannot use with one line and exit code 2, before it listens. */
class AgentCommandTest {
    @TempDir
    Path dir;

    @Test
    void aSharedMemoryDirectoryThatIsNotOneIsRefused() throws Exception {
        Path file = Files.writeString(dir.resolve("file"), "x");
        assertEquals(
                "shared-memory directory " + file + " is not a writable directory",
                ProbeFailuresTest.fails(
                        2, "agent", "--socket", dir.resolve("a.sock").toString(), "--shm-dir", file.toString()));
    }

    @Test
    void aNotifierOrPfsPublishWouldRefuseIsRefusedBeforeItListens() throws Exception {
        // the agent listened with any of these; publish and consume refuse them
        Path socket = dir.resolve("a.sock");
        Path file = Files.writeString(dir.resolve("file"), "x");
        String[][] cases = {
            {"--notifier", "zz://a:1", "no notifier for 'zz://' (installed: embedded://, kafka://)"},
            {
                "--notifier",
                "embedded://127.0.0.1:99999",
                "'embedded://127.0.0.1:99999' has port 99999 out of range 0-65535 (expected embedded://host:port;"
                        + " port 0 picks a free one)"
            },
            {"--notifier", "kafka://h:9092/t", "kafka URI 'kafka://h:9092/t' must not have a path"},
            {"--pfs", file.toString(), "repository root '" + file.toUri() + "' exists but is not a directory"},
        };
        for (String[] c : cases) {
            String line = ProbeFailuresTest.fails(
                    2, "agent", "--socket", socket.toString(), "--shm-dir", dir.toString(), c[0], c[1]);
            assertTrue(line.startsWith(c[2]), c[1] + " -> " + line);
            assertFalse(Files.exists(socket), "refused before it listened");
        }
        assertEquals(
                "Invalid value for option '--shm-dir': an empty path (see 'viper agent --help')",
                ProbeFailuresTest.fails(2, "agent", "--socket", socket.toString(), "--shm-dir", ""));
    }

    @Test
    void aSecondAgentOnTheSameSocketIsRefused() throws Exception {
        Path socket = dir.resolve("a.sock");
        try (ViperAgent first = ViperAgent.start(socket, dir, Viper.builder())) {
            assertEquals(
                    "another agent is listening on " + socket + " (stop it, or give this one another --socket)",
                    ProbeFailuresTest.fails(2, "agent", "--socket", socket.toString(), "--shm-dir", dir.toString()));
        }
    }

    @Test
    void aSocketPathThatIsAFileIsRefusedAndLeftAlone() throws Exception {
        Path notSocket = Files.writeString(dir.resolve("notes.txt"), "mine");
        assertEquals(
                notSocket + " exists and is not a socket (give the agent another --socket)",
                ProbeFailuresTest.fails(2, "agent", "--socket", notSocket.toString(), "--shm-dir", dir.toString()));
        assertEquals("mine", Files.readString(notSocket));
    }

    @Test
    void theAgentsCredentialsAndTlsSettingsReachItsSdkAndAreCheckedAtStart() throws Exception {
        Path socket = dir.resolve("a.sock");
        Path shared = Files.writeString(dir.resolve("shared.secret"), "0123456789abcdef0123456789abcdef\n");
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rw-r--r--"));
        assertEquals(
                "viper.auth.secret.file " + shared
                        + ": group or other users may access it (mode rw-r--r--); chmod 600 it, as ssh requires of"
                        + " private keys",
                ProbeFailuresTest.fails(
                        2,
                        "agent",
                        "--socket",
                        socket.toString(),
                        "--shm-dir",
                        dir.toString(),
                        "--set",
                        "viper.auth.secret.file=" + shared));
        Path config = Files.writeString(
                dir.resolve("agent.properties"), "viper.tls.enabled=true\nviper.tls.trust.file=" + shared + "\n");
        assertEquals(
                "viper.tls.trust.file " + shared + ": not PEM certificates: Incomplete BER/DER data",
                ProbeFailuresTest.fails(
                        2,
                        "agent",
                        "--socket",
                        socket.toString(),
                        "--shm-dir",
                        dir.toString(),
                        "--config",
                        config.toString()));
        assertFalse(Files.exists(socket), "refused before it listened");
    }
}
