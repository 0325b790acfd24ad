package io.viper.testing.python;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The Python the client's tests run on: {@code $VIPER_PYTHON}, else Debian's {@code /usr/bin/python3} (the one
 * {@code scripts/setup-system.sh} installs numpy and torch for; a {@code python3} earlier on the PATH, such as pyenv's,
 * may lack them). Tests abort with the reason where it or its packages are missing.
 */
public final class PythonRuntime {
    private PythonRuntime() {}

    /** The repository root (the parent of testdata/, which the build names). */
    public static Path repository() {
        return Path.of(System.getProperty("viper.testdata", "../testdata"))
                .toAbsolutePath()
                .normalize()
                .getParent();
    }

    /** The interpreter, after checking it imports numpy and torch (else the test aborts, naming what is missing). */
    public static String python() throws IOException, InterruptedException {
        String python = System.getenv().getOrDefault("VIPER_PYTHON", "/usr/bin/python3");
        assumeTrue(
                Files.isExecutable(Path.of(python)),
                python + " is missing (scripts/setup-system.sh installs Debian's python3)");
        Result r = run(List.of(python, "-c", "import numpy, torch"), Map.of(), 120);
        assumeTrue(
                r.exit() == 0,
                python + " cannot import numpy and torch (scripts/setup-system.sh installs python3-numpy "
                        + "python3-torch as root): " + r.output().strip());
        return python;
    }

    /** What a finished process printed (stdout and stderr together) and its exit code. */
    public record Result(int exit, String output) {}

    /** Runs {@code command} in the repository with {@code env} added and the client on PYTHONPATH. */
    public static Result run(List<String> command, Map<String, String> env, long timeoutSeconds)
            throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(command))
                .directory(repository().toFile())
                .redirectErrorStream(true);
        pb.environment()
                .put("PYTHONPATH", repository().resolve("clients/python").toString());
        pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        pb.environment().putAll(env);
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(command + " did not finish within " + timeoutSeconds + " s:\n"
                    + new String(out, StandardCharsets.UTF_8));
        }
        return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }
}
