package io.viper.transfer.ucx.internal;

import io.viper.ViperConfig;
import io.viper.auth.ClientAuth;
import io.viper.errors.ViperConfigException;
import io.viper.net.FrameChannel;
import io.viper.net.LocalSockets;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.OptionalInt;

/**
 * Whether a consumer may hand what a ucx producer sends (its UCX worker address and packed rkey) to UCX, which parses
 * them in native code and aborts the whole process on a malformed one. A producer that passed the handshake with the
 * consumer's secret proved who it is. Without a secret, the consumer trusts only a producer on this host that runs as
 * its own user (or root), read from the kernel's socket table, since any other local user could answer on a port a
 * forged manifest names; a producer on another host without credentials only when {@code viper.auth.required=false}.
 * Stateless and thread-safe.
 */
final class ProducerTrust {
    private final boolean authenticated;
    private final boolean trustEveryone;

    private ProducerTrust(boolean authenticated, boolean trustEveryone) {
        this.authenticated = authenticated;
        this.trustEveryone = trustEveryone;
    }

    static ProducerTrust of(ViperConfig config, ClientAuth auth) {
        return new ProducerTrust(
                auth.hasSecret(), config.get(ViperConfig.AUTH_REQUIRED).equals("false"));
    }

    /**
     * Refuses the producer whose control channel listens at {@code control} unless it is trusted as above.
     *
     * @throws ViperConfigException naming the producer and what to set
     */
    void check(InetSocketAddress control, String peer) {
        if (authenticated || trustEveryone) {
            return;
        }
        InetAddress address;
        try {
            address = InetAddress.getByName(control.getHostString());
        } catch (UnknownHostException e) {
            return; // the connection fails on its own
        }
        if (!address.isLoopbackAddress()) {
            throw new ViperConfigException(
                    peer + " is on another host and this consumer has no " + ViperConfig.AUTH_SECRET_FILE.name()
                            + ": without credentials UCX data is trusted only from this host's own user (or set "
                            + ViperConfig.AUTH_REQUIRED.name() + "=false)");
        }
    }

    /**
     * Refuses the connection {@code ch} to a producer unless it is trusted as above: without credentials, the process
     * at its other end must run as this consumer's user (or root), read from the kernel's socket table for this very
     * connection, so that no listener that comes and goes between a check and the connect can slip past; a connection
     * whose other end is not found is refused too.
     *
     * @throws ViperConfigException naming the producer and what to set
     */
    void checkConnected(FrameChannel ch, String peer) {
        if (authenticated || trustEveryone) {
            return;
        }
        OptionalInt owner;
        try {
            InetSocketAddress[] ends = ch.ends();
            owner = LocalSockets.ownerOfPeer(ends[0], ends[1]);
        } catch (IOException e) {
            owner = OptionalInt.empty();
        }
        int me = LocalSockets.ownUid();
        if (owner.isEmpty() || (owner.getAsInt() != me && owner.getAsInt() != 0)) {
            throw new ViperConfigException(peer + " is run by "
                    + (owner.isEmpty() ? "a user the socket table does not show" : "user " + owner.getAsInt())
                    + ", not by this consumer's (" + me + "), and neither side has a secret ("
                    + ViperConfig.AUTH_SECRET_FILE.name() + ", " + ViperConfig.AUTH_USER_SECRET.name()
                    + "): not handing its UCX addresses to UCX");
        }
    }
}
