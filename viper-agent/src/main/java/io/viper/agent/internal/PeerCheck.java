package io.viper.agent.internal;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.util.Optional;
import jdk.net.ExtendedSocketOptions;
import jdk.net.UnixDomainPrincipal;

/**
 * Which local users the agent serves: only {@code allowed}, the user it runs as. The socket's mode (0600 in a 0700
 * directory) keeps others out already; this second check, on the kernel's credentials of the connected process
 * ({@code SO_PEERCRED}), holds even where someone loosened those permissions, and refuses root too. Stateless and
 * thread-safe.
 *
 * @param allowed the one user whose processes may talk to the agent
 */
public record PeerCheck(UserPrincipal allowed) {
    /** The user that owns {@code socket}: the agent's own, since the agent just created it. */
    public static PeerCheck ownerOf(Path socket) throws IOException {
        return new PeerCheck(Files.getOwner(socket, LinkOption.NOFOLLOW_LINKS));
    }

    /** Why the process at the other end of {@code client} is refused, or empty when it runs as {@link #allowed}. */
    public Optional<String> refusal(SocketChannel client) {
        UnixDomainPrincipal peer;
        try {
            peer = client.getOption(ExtendedSocketOptions.SO_PEERCRED);
        } catch (IOException | RuntimeException e) {
            return Optional.of("its credentials cannot be read (" + e.getMessage() + ")");
        }
        if (peer.user().equals(allowed)) {
            return Optional.empty();
        }
        return Optional.of("it runs as user " + peer.user().getName() + ", the agent only serves " + allowed.getName());
    }
}
