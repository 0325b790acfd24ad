package io.viper.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperFormatException;
import io.viper.tensor.Tensor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A symbolic link planted where the writer is to write (issue 39, case 6): {@code write} refuses it and {@code replace}
 * replaces the link itself; neither writes through it, so the file or directory it points to stays as it was.
 */
class SafetensorsWriterLinksTest {
    @TempDir
    Path dir;

    private static List<Tensor> tensors(Arena arena) {
        return List.of(Tensor.ofFloats("w", new long[] {2}, new float[] {1, 2}, arena));
    }

    @Test
    void writeRefusesALinkToAFileAndLeavesItsTargetAlone() throws IOException {
        Path victim = Files.writeString(dir.resolve("victim"), "precious", StandardCharsets.US_ASCII);
        Path link = Files.createSymbolicLink(dir.resolve("m.safetensors"), victim);
        try (Arena arena = Arena.ofConfined()) {
            ViperFormatException e = assertThrows(
                    ViperFormatException.class, () -> SafetensorsWriter.write(link, tensors(arena), Map.of()));
            assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
        }
        assertEquals("precious", Files.readString(victim, StandardCharsets.US_ASCII));
        assertTrue(Files.isSymbolicLink(link), "the link is left for its owner to look at");
    }

    @Test
    void replaceReplacesALinkInsteadOfFollowingIt() throws IOException {
        Path victim = Files.writeString(dir.resolve("victim"), "precious", StandardCharsets.US_ASCII);
        Path outside = Files.createDirectory(dir.resolve("outside"));
        Path toFile = Files.createSymbolicLink(dir.resolve("a.safetensors"), victim);
        Path toDir = Files.createSymbolicLink(dir.resolve("b.safetensors"), outside);
        try (Arena arena = Arena.ofConfined()) {
            for (Path link : List.of(toFile, toDir)) {
                long size = SafetensorsWriter.replace(link, tensors(arena), Map.of());
                assertTrue(Files.isRegularFile(link, LinkOption.NOFOLLOW_LINKS), link + " is now the written file");
                assertEquals(size, Files.size(link));
                try (SafetensorsFile f = SafetensorsFile.open(link)) {
                    assertEquals(
                            List.of("w"), f.tensors().stream().map(Tensor::name).toList());
                }
            }
        }
        assertEquals("precious", Files.readString(victim, StandardCharsets.US_ASCII));
        try (Stream<Path> s = Files.list(outside)) {
            assertEquals(List.of(), s.toList(), "nothing written into the linked directory");
        }
    }

    @Test
    void replaceDoesNotFollowALinkPlantedAtItsTemporaryName() throws IOException {
        Path victim = Files.writeString(dir.resolve("victim"), "precious", StandardCharsets.US_ASCII);
        // Temporary names are .NAME.PID.N.tmp: plant links at the next few numbers.
        for (int n = 0; n < 64; n++) {
            Files.createSymbolicLink(
                    dir.resolve(".c.safetensors." + ProcessHandle.current().pid() + "." + n + ".tmp"), victim);
        }
        try (Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < 3; i++) {
                SafetensorsWriter.replace(dir.resolve("c.safetensors"), tensors(arena), Map.of());
            }
        }
        assertEquals("precious", Files.readString(victim, StandardCharsets.US_ASCII));
        assertFalse(Files.isSymbolicLink(dir.resolve("c.safetensors")));
    }
}
