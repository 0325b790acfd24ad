package io.viper.agent.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The agent's shared-memory directory: a name that is taken is refused with a message saying so. */
class SharedMemoryTest {
    @TempDir
    Path shm;

    @Test
    void aNameThatIsTakenFailsSayingSo() throws IOException {
        try (SharedMemory memory = new SharedMemory(shm, () -> "0123456789abcdef0123456789abcdef")) {
            Path taken = Files.write(memory.dir().resolve("0123456789abcdef0123456789abcdef-slot"), new byte[3]);
            ViperException e = assertThrows(ViperException.class, () -> memory.create("slot", 4096));
            assertEquals(ViperException.Reason.IO, e.reason());
            assertEquals(
                    "cannot create shared-memory file " + taken + ": a file of that name exists already, which this"
                            + " agent did not make (check who writes into " + memory.dir() + ")",
                    e.getMessage());
            assertEquals(3, Files.size(taken), "the file that was there is left as it was");
            try (ShmFile f = memory.create("recv", 4096)) {
                assertEquals(4096, f.byteSize());
            }
        }
    }

    @Test
    void theDirectoryIsMadeLockedAndRemovedAtClose() throws IOException {
        Path own;
        try (SharedMemory memory = new SharedMemory(shm);
                SharedMemory second = new SharedMemory(shm)) {
            own = memory.dir();
            assertTrue(Files.isRegularFile(own.resolve(SharedMemory.LOCK_FILE)));
            assertEquals(0, second.removeStale(), "a live agent's directory in this JVM is not stale");
            assertTrue(Files.isDirectory(own));
            memory.create("slot", 16);
        }
        assertFalse(Files.exists(own), "closing removes the files and the directory");
        try (var left = Files.list(shm)) {
            assertEquals(0, left.count(), "nothing is left in the shared-memory directory");
        }
    }
}
