package io.viper.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.Viper;
import io.viper.notify.embedded.EmbeddedBroker;
import io.viper.testing.python.PythonRuntime;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Python client's own tests ({@code clients/python/tests}, unittest) against a real agent in this JVM: their
 * failures fail the build. The agent's shared-memory files live in /dev/shm, as in use, and none is left once the agent
 * stops.
 */
class PythonClientIT {
    @TempDir
    Path dir;

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void thePythonClientsTestsPassAgainstARealAgent() throws Exception {
        String python = PythonRuntime.python();
        // A broker of its own, as `viper broker` runs: Python consumers may start before the first
        // producer, and the broker vouches for the versions of a new model, which start at 1.
        PythonRuntime.Result r;
        Path shm = Files.createTempDirectory(Path.of("/dev/shm"), "viper-it-");
        try (EmbeddedBroker broker = EmbeddedBroker.start("127.0.0.1", 0);
                ViperAgent agent = ViperAgent.start(
                        dir.resolve("agent.sock"),
                        shm,
                        Viper.builder()
                                .notifier("embedded://127.0.0.1:" + broker.port())
                                .transports("tcp://127.0.0.1:0"))) {
            r = PythonRuntime.run(
                    List.of(
                            python,
                            "-m",
                            "unittest",
                            "discover",
                            "-v",
                            "-s",
                            "clients/python/tests",
                            "-t",
                            "clients/python"),
                    Map.of(
                            "VIPER_AGENT_SOCKET",
                            agent.socket().toString(),
                            "VIPER_TESTDATA",
                            System.getProperty("viper.testdata")),
                    240);
        }
        System.out.println(r.output());
        assertEquals(0, r.exit(), "the Python client's tests failed:\n" + r.output());
        assertTrue(r.output().contains("\nOK"), r.output());
        assertFalse(r.output().contains("skipped"), "no Python test may skip here:\n" + r.output());
        try (Stream<Path> left = Files.list(shm)) {
            assertEquals(List.of(), left.toList(), "the agent removed its shared-memory files");
        } finally {
            Files.deleteIfExists(shm);
        }
    }
}
