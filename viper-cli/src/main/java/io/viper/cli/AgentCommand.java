package io.viper.cli;

import io.viper.agent.AgentProtocol;
import io.viper.agent.ViperAgent;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code viper agent}: the local sidecar that serves Python (and other) producers and consumers. */
@Command(
        name = "agent",
        mixinStandardHelpOptions = true,
        description = {
            "Run the viper agent, the local sidecar for clients in other languages.",
            "It owns the Java SDK (producers, consumers, transports, notifier, PFS) for processes such as",
            "the Python client (clients/python), which talk to it over an owner-only Unix domain socket;",
            "model bytes lie in shared memory. Prints one line when listening; stops on",
            "Ctrl-C or SIGTERM, removing its socket and files."
        })
final class AgentCommand implements Callable<Integer> {
    @Option(
            names = "--socket",
            paramLabel = "PATH",
            description = "Socket clients connect to (default: $" + AgentProtocol.SOCKET_ENV
                    + ", else $XDG_RUNTIME_DIR/viper/agent.sock, else /tmp/viper-UID/agent.sock)")
    Path socket;

    @Option(
            names = "--shm-dir",
            paramLabel = "DIR",
            defaultValue = "/dev/shm",
            description = "Where the shared-memory files of models live (default: ${DEFAULT-VALUE})")
    Path shmDir;

    @Mixin
    CommonOptions common;

    @Override
    public Integer call() throws Exception {
        ViperAgent agent =
                ViperAgent.start(socket != null ? socket : AgentProtocol.defaultSocket(), shmDir, common.builder());
        CountDownLatch stopped = new CountDownLatch(1);
        // The JVM ends when its shutdown hooks do: the agent is closed (socket and files removed) in the hook itself.
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            agent.close();
                            stopped.countDown();
                        },
                        "viper-agent-stop"));
        System.out.println("viper agent listening on " + agent.socket() + " (protocol " + AgentProtocol.VERSION
                + ", notifier " + agent.notifierUri() + ", shared memory in " + shmDir + ")");
        System.out.flush();
        stopped.await();
        return 0;
    }
}
