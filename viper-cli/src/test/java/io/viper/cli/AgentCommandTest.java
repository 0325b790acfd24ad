package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.viper.Viper;
import io.viper.agent.ViperAgent;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code viper agent} refuses what it cannot use with one line and exit code 2, before it listens. */
class AgentCommandTest {
    @TempDir
    Path dir;

    @Test
    void aSharedMemoryDirectoryThatIsNotOneIsRefused() throws Exception {
        Path file = Files.writeString(dir.resolve("file"), "x");
        assertEquals("shared-memory directory " + file + " is not a writable directory",
                ProbeFailuresTest.fails(2, "agent", "--socket", dir.resolve("a.sock").toString(), "--shm-dir", file.toString()));
    }

    @Test
    void aSecondAgentOnTheSameSocketIsRefused() throws Exception {
        Path socket = dir.resolve("a.sock");
        try (ViperAgent first = ViperAgent.start(socket, dir, Viper.builder())) {
            assertEquals("another agent is listening on " + socket + " (stop it, or give this one another --socket)",
                    ProbeFailuresTest.fails(2, "agent", "--socket", socket.toString(), "--shm-dir", dir.toString()));
        }
    }

    @Test
    void aSocketPathThatIsAFileIsRefusedAndLeftAlone() throws Exception {
        Path notSocket = Files.writeString(dir.resolve("notes.txt"), "mine");
        assertEquals(notSocket + " exists and is not a socket (give the agent another --socket)",
                ProbeFailuresTest.fails(2, "agent", "--socket", notSocket.toString(), "--shm-dir", dir.toString()));
        assertEquals("mine", Files.readString(notSocket));
    }
}
