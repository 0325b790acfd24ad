package io.viper.agent.internal;

import io.viper.Viper;

/**
 * What the connections of one agent share: the Viper instance, the shared-memory directory, the
 * producers and consumers it opened for its clients, and how the agent names itself in replies.
 */
public record AgentContext(Viper viper, SharedMemory shm, Producers producers, Consumers consumers, String description)
        implements AutoCloseable {

    /**
     * Wires an agent around {@code viper}, built from {@code builder} with its consumers' receive
     * buffers in {@code shm}'s files.
     */
    public static AgentContext open(Viper.Builder builder, java.nio.file.Path shmDir, String description) {
        SharedMemory shm = new SharedMemory(shmDir);
        SharedReceiveBuffers receive = new SharedReceiveBuffers(shm);
        Viper viper = builder.receiveAllocator(receive).build();
        return new AgentContext(viper, shm, new Producers(viper), new Consumers(viper, shm, receive), description);
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
