package io.viper.agent;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The constants of the agent's protocol (described in full in {@code docs/agent-protocol.md}): its version, the frame
 * limit, and where agent and clients look for the socket when none is named.
 */
public final class AgentProtocol {
    /** The protocol version an agent speaks; a client's {@code hello} must name it. */
    public static final int VERSION = 1;

    /** The largest frame body accepted (bytes): messages are small, model bytes never cross the socket. */
    public static final int MAX_FRAME_BYTES = 1 << 20;

    /** The environment variable that names the socket. */
    public static final String SOCKET_ENV = "VIPER_AGENT_SOCKET";

    private AgentProtocol() {}

    /**
     * The socket agent and clients use when none is named: {@code $VIPER_AGENT_SOCKET}, else
     * {@code $XDG_RUNTIME_DIR/viper/agent.sock}, else {@code /tmp/viper-<uid>/agent.sock}.
     */
    public static Path defaultSocket() {
        String named = System.getenv(SOCKET_ENV);
        if (named != null && !named.isBlank()) {
            return Path.of(named);
        }
        String runtime = System.getenv("XDG_RUNTIME_DIR");
        if (runtime != null && !runtime.isBlank() && Files.isDirectory(Path.of(runtime))) {
            return Path.of(runtime, "viper", "agent.sock");
        }
        return Path.of("/tmp", "viper-" + uid(), "agent.sock");
    }

    private static String uid() {
        try {
            return Files.getAttribute(Path.of("/proc/self"), "unix:uid").toString();
        } catch (Exception e) {
            return System.getProperty("user.name", "user");
        }
    }
}
