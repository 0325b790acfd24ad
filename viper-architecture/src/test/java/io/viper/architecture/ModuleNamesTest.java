package io.viper.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every module's folder, artifact, module name and package root agree: {@link ModuleNames}. */
class ModuleNamesTest {
    @Test
    void everyModuleOfTheReactorHasOneName() {
        Path root = Repository.root();
        assertTrue(
                Files.isRegularFile(root.resolve("pom.xml")) && Files.isDirectory(root.resolve("viper-core")),
                "the repository root was found: " + root);
        assertEquals(List.of(), ModuleNames.disagreements(root));
    }

    @Test
    void namesFollowTheArtifact() {
        assertEquals("io.viper", ModuleNames.packageRoot("viper-core"));
        assertEquals("io.viper.core", ModuleNames.moduleName("viper-core"));
        assertEquals("io.viper.transfer.cuda", ModuleNames.packageRoot("viper-transfer-cuda"));
        assertEquals("io.viper.transfer.cuda", ModuleNames.moduleName("viper-transfer-cuda"));
        assertEquals("io.viper.examples", ModuleNames.packageRoot("examples"));
    }

    @Test
    void eachDisagreementIsNamed(@TempDir Path root) throws IOException {
        write(root.resolve("pom.xml"), "<project><modules><module>viper-transfer</module></modules></project>");
        write(
                root.resolve("viper-transfer/pom.xml"),
                "<project><parent><artifactId>viper-parent</artifactId></parent>"
                        + "<artifactId>viper-transfer-parent</artifactId>"
                        + "<modules><module>cuda</module></modules></project>");
        Path cuda = root.resolve("viper-transfer/cuda");
        write(
                cuda.resolve("pom.xml"),
                "<project><parent><artifactId>viper-transfer-parent</artifactId></parent>"
                        + "<artifactId>viper-transport-cuda</artifactId></project>");
        write(cuda.resolve("src/main/java/module-info.java"), "module io.viper.transport.cuda {\n}\n");
        Path java = cuda.resolve("src/main/java/io/viper/transfer");
        write(java.resolve("gpu/A.java"), "package io.viper.transfer.gpu;\nclass A {}\n");
        write(
                cuda.resolve("src/test/java/io/viper/transfer/cuda/B.java"),
                "package io.viper.transfer.cuda;\nclass B {}\n");
        assertEquals(
                List.of(
                        "viper-transfer/cuda: artifact viper-transport-cuda, expected viper-transfer-cuda"
                                + " (the folder's path, '-' for '/')",
                        "viper-transfer/cuda: module io.viper.transport.cuda, expected io.viper.transfer.cuda",
                        "viper-transfer/cuda/src/main/java/io/viper/transfer/gpu/A.java: package io.viper.transfer.gpu,"
                                + " outside the module's root io.viper.transfer.cuda"),
                ModuleNames.disagreements(root));
    }

    private static void write(Path file, String text) throws IOException {
        Files.createDirectories(file.getParent());
        Files.writeString(file, text);
    }
}
