package io.viper.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.viper.testing.python.PythonRuntime;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The install the docs give for Debian's Python, which refuses {@code pip install} outside a virtual environment (PEP
 * 668): a venv made with {@code --system-site-packages} takes the client and still sees the system's numpy and torch.
 * Offline here ({@code --no-index --no-build-isolation}: setuptools comes from the system), from a copy of the client
 * so that the build leaves nothing in the repository.
 */
class PythonInstallIT {
    private static final String DOCUMENTED =
            "python3 -m venv --system-site-packages ~/viper-venv && ~/viper-venv/bin/pip install ./clients/python";

    @TempDir
    Path dir;

    @Test
    void aVenvWithSystemSitePackagesTakesTheClientAndSeesNumpyAndTorch() throws Exception {
        Path repo = PythonRuntime.repository();
        for (String doc : List.of("docs/python.md", "clients/python/README.md")) {
            assertTrue(Files.readString(repo.resolve(doc)).contains(DOCUMENTED), doc + " gives the venv command");
        }
        String python = PythonRuntime.python();
        Path venv = dir.resolve("venv");
        PythonRuntime.Result made = PythonRuntime.run(
                List.of(python, "-m", "venv", "--system-site-packages", venv.toString()), Map.of(), 120);
        assumeTrue(
                made.exit() == 0,
                "python3 -m venv does not work here (Debian: apt-get install python3-venv): " + made.output());
        Path client = dir.resolve("client");
        copy(repo.resolve("clients/python"), client);
        PythonRuntime.Result installed = PythonRuntime.run(
                List.of(
                        venv.resolve("bin/pip").toString(),
                        "install",
                        "--no-index",
                        "--no-build-isolation",
                        "-q",
                        client.toString()),
                Map.of(),
                300);
        assertEquals(0, installed.exit(), installed.output());
        PythonRuntime.Result imported = PythonRuntime.run(
                List.of(
                        venv.resolve("bin/python").toString(),
                        "-c",
                        "import viper, numpy, torch; print(viper.__file__)"),
                Map.of("PYTHONPATH", ""),
                120);
        assertEquals(0, imported.exit(), imported.output());
        assertTrue(imported.output().strip().startsWith(venv.toString()), "the venv's copy: " + imported.output());
    }

    private static void copy(Path from, Path to) throws Exception {
        try (Stream<Path> files = Files.walk(from)) {
            for (Path f :
                    files.filter(p -> !p.toString().contains("__pycache__")).toList()) {
                Path target = to.resolve(from.relativize(f).toString());
                if (Files.isDirectory(f)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(f, target);
                }
            }
        }
    }
}
