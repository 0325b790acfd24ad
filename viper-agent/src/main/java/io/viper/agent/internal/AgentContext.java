package io.viper.agent.internal;

import io.viper.Viper;
import io.viper.auth.Secret;
import io.viper.net.Tls;
import java.nio.file.Path;

/**
 * What the connections of one agent share: the Viper instance, the shared-memory directory, the producers and consumers
 * it opened for its clients, and how the agent names itself in replies.
 */
public record AgentContext(Viper viper, SharedMemory shm, Producers producers, Consumers consumers, String description)
        implements AutoCloseable {

    /**
     * Wires an agent around {@code viper}, built from {@code builder} with its consumers' receive buffers in
     * {@code shm}'s files. The credentials and TLS trust of its settings are read now, so that an agent that could not
     * use them is refused at start, not at its clients' first request.
     */
    public static AgentContext open(Viper.Builder builder, Path shmDir, String description) {
        SharedMemory shm = new SharedMemory(shmDir);
        SharedReceiveBuffers receive = new SharedReceiveBuffers(shm);
        Viper viper;
        try {
            viper = builder.receiveAllocator(receive).build();
        } catch (RuntimeException e) {
            shm.close();
            throw e;
        }
        try {
            Secret.fromConfig(viper.config());
            Tls.client(viper.config());
            viper.checkSettings();
        } catch (RuntimeException e) {
            viper.close();
            shm.close();
            throw e;
        }
        return new AgentContext(viper, shm, new Producers(viper), new Consumers(viper, shm, receive), description);
    }

    /** The agent's own shared-memory directory, where its files are. */
    public Path shmDir() {
        return shm.dir();
    }

    /** Bytes of the agent's shared-memory files open now: producers' slots and consumers' receive buffers. */
    public long sharedMemoryBytes() {
        return shm.openBytes();
    }

    /** Producer slots (shared-memory files clients write checkpoints into) open now. */
    public long slots() {
        return shm.openFiles(ProducerSession.SLOT_KIND);
    }

    /** Removes the shared-memory files that agents no longer running left; returns how many. */
    public int removeStaleFiles() {
        return shm.removeStale();
    }

    /** Closes the Viper instance, then removes the shared-memory files still open. */
    @Override
    public void close() {
        viper.close();
        shm.close();
    }
}
