package io.viper.transfer.ucx.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which of jucx's unpacked library directories {@link JucxLeftovers} removes: those of processes that are gone, a
 * minute old; not one a running process maps, not a young one, not a link, not another name. (The whole story, a
 * process killed with SIGKILL and the next one cleaning up, is {@code LeftoversIT} in viper-faults.)
 */
class JucxLeftoversTest {
    @TempDir
    Path tmp;

    @TempDir
    Path elsewhere;

    private Path unpacked(String name, Duration age) throws Exception {
        Path d = Files.createDirectory(tmp.resolve(name));
        Files.write(d.resolve("libjucx.so"), new byte[4096]);
        Files.setLastModifiedTime(d, FileTime.from(Instant.now().minus(age)));
        return d;
    }

    @Test
    void onlyTheOldUnmappedDirectoriesGo() throws Exception {
        Path gone = unpacked("jucx123", Duration.ofMinutes(5));
        Path mapped = unpacked("jucx456", Duration.ofMinutes(5));
        Path young = unpacked("jucx789", Duration.ZERO);
        Path other = unpacked("jucxy1", Duration.ofMinutes(5));
        Path victim = Files.createDirectory(elsewhere.resolve("victim"));
        Files.writeString(victim.resolve("keep"), "precious");
        Path link = Files.createSymbolicLink(tmp.resolve("jucx999"), victim);
        try (Arena arena = Arena.ofConfined();
                FileChannel ch = FileChannel.open(mapped.resolve("libjucx.so"), StandardOpenOption.READ)) {
            // This process maps a file in it, as a process that loaded libjucx.so from there does.
            MemorySegment map = ch.map(FileChannel.MapMode.READ_ONLY, 0, 4096, arena);
            assertEquals(List.of(gone), JucxLeftovers.remove(tmp, JucxLeftovers.MIN_AGE));
            assertEquals(0, map.get(ValueLayout.JAVA_BYTE, 0));
        }
        assertTrue(Files.exists(mapped) && Files.exists(young) && Files.exists(other), "the others stay");
        assertTrue(Files.isSymbolicLink(link) && Files.exists(victim.resolve("keep")), "a link is not followed");
        assertEquals(List.of(mapped), JucxLeftovers.remove(tmp, JucxLeftovers.MIN_AGE), "unmapped, it goes too");
    }
}
