package io.viper.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.Viper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.HexFormat;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Issue 39 case 7: the agent's shared-memory files have names nobody can predict, in a directory only the agent's user
 * can write into, and the agent's start-up cleaning never touches another user's files.
 */
class AgentSharedMemoryTest extends AgentTestBase {
    private static final long PID = ProcessHandle.current().pid();

    /** Root can hand a file to another user; any other user cannot, and the tests that need it say so. */
    private UserPrincipal anotherUser() throws IOException {
        assumeTrue((Integer) Files.getAttribute(dir, "unix:uid") == 0, "needs root to make files of another user");
        return dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
    }

    private Path planted(Path file, UserPrincipal owner) throws IOException {
        Files.write(file, new byte[16]);
        Files.setOwner(file, owner);
        return file;
    }

    @Test
    void namesPlantedInAdvanceDoNotStopAllocationsAndNoNameCanBeGuessed() throws Exception {
        // Another user creates every name the agent used to take: viper-agent-<pid>-<n>-<kind>.
        UserPrincipal other = anotherUser();
        for (int n = 1; n <= 32; n++) {
            planted(shm.resolve("viper-agent-" + PID + "-" + n + "-slot"), other);
        }
        ViperAgent agent = producerAgent();
        TestClient producer = client(agent, "producer", "m");
        ObjectNode a = producer.request("alloc", "bytes", 4096);
        assertTrue(a.get("ok").asBoolean(), a.toString());
        ObjectNode b = producer.request("alloc", "bytes", 4096);
        assertTrue(b.get("ok").asBoolean(), b.toString());
        Path first = Path.of(a.get("path").asText());
        Path second = Path.of(b.get("path").asText());

        for (Path p : new Path[] {first, second}) {
            String name = p.getFileName().toString();
            assertTrue(name.matches("[0-9a-f]{32}-slot"), name + ": 128 random bits and the kind, no pid");
        }
        assertNotEquals(first.getFileName(), second.getFileName());
        Path own = first.getParent();
        assertEquals(own, second.getParent());
        assertEquals(shm, own.getParent(), "the agent's directory is in --shm-dir");
        assertTrue(own.getFileName().toString().matches("viper-agent-[0-9a-f]{32}"), own.toString());
        assertFalse(own.getFileName().toString().contains(Long.toString(PID) + "-"), "no pid in the directory");
        assertEquals(
                "rwx------",
                PosixFilePermissions.toString(Files.getPosixFilePermissions(own, LinkOption.NOFOLLOW_LINKS)));
        assertEquals(Files.getOwner(dir), Files.getOwner(own, LinkOption.NOFOLLOW_LINKS), "owned by the agent's user");
        assertEquals(
                "rw-------",
                PosixFilePermissions.toString(Files.getPosixFilePermissions(first, LinkOption.NOFOLLOW_LINKS)));

        ViperAgent another = keep(ViperAgent.start(
                dir.resolve("q.sock"),
                shm,
                Viper.builder().notifier("embedded://127.0.0.1:0").transports("tcp://127.0.0.1:0")));
        ObjectNode hello = keep(TestClient.connect(another.socket())).hello("producer", "n");
        assertTrue(hello.get("ok").asBoolean(), hello.toString());
        Path otherDir = Path.of(hello.get("shm_dir").asText());
        assertNotEquals(own, otherDir, "each agent has a directory of its own");
        assertTrue(Files.isDirectory(own), "a second agent's start leaves a running agent's directory alone");
        agent.close();
        assertFalse(Files.exists(own), "an agent that stops removes its directory");
    }

    @Test
    void startUpCleaningRemovesOnlyThisUsersLeftovers() throws Exception {
        UserPrincipal other = anotherUser();
        long deadPid = PID + 4_000_000; // above Linux's largest pid
        // Another user's files and directories that look like a dead agent's: not this agent's to delete.
        Path theirsOld = planted(shm.resolve("viper-agent-" + deadPid + "-1-slot"), other);
        Path theirsDir = deadAgentDirectory();
        Files.setOwner(theirsDir.resolve("agent.lock"), other);
        Files.setOwner(theirsDir, other);
        // This user's leftovers of a killed agent, in both layouts.
        Path oursOld = Files.write(shm.resolve("viper-agent-" + deadPid + "-2-slot"), new byte[16]);
        Path oursDir = deadAgentDirectory();

        producerAgent();
        assertTrue(Files.exists(theirsOld), "another user's file is left alone");
        assertTrue(Files.isDirectory(theirsDir), "another user's directory is left alone");
        assertFalse(Files.exists(oursOld), "this user's file of a dead agent is removed");
        assertFalse(Files.exists(oursDir), "this user's directory of a dead agent is removed");
    }

    /** What a killed agent leaves: its directory, an unlocked lock file and a file. */
    private Path deadAgentDirectory() throws IOException {
        byte[] id = new byte[16];
        new SplittableRandom().nextBytes(id);
        Path d = Files.createDirectory(
                shm.resolve("viper-agent-" + HexFormat.of().formatHex(id)));
        Files.write(d.resolve("agent.lock"), new byte[0]);
        Files.write(d.resolve(HexFormat.of().formatHex(id) + "-slot"), new byte[16]);
        return d;
    }
}
