package io.viper.internal.producer;

import io.viper.spi.TransportServer;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Withdraws a producer's staging buffers from its transports. A retired buffer is withdrawn on a thread of its own
 * ({@code viper-withdraw-<model>}), off the threads that close leases (event loops among them), after which the
 * {@link StagingCache} may reuse it. Made before the cache, whose retire callback {@link #later} is, so that the
 * callback's target exists from the start.
 *
 * <p>Thread-safe; {@link #close} is called once, by the {@link PublishPipeline} closing.
 */
final class Withdrawals implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Withdrawals.class.getName());

    private final String model;
    private final List<TransportServer> servers;
    private final ExecutorService thread;

    Withdrawals(String model, List<TransportServer> servers) {
        this.model = model;
        this.servers = servers;
        this.thread = Executors.newSingleThreadExecutor(r ->
                Thread.ofPlatform().daemon().name("viper-withdraw-" + model).unstarted(r));
    }

    /**
     * The {@link StagingCache}'s retire callback, once a retired buffer's last lease closed: withdraws it from every
     * transport on this thread (on the caller's once closed), then tells the cache.
     */
    void later(StagingBuffer buffer) {
        Runnable withdraw = () -> {
            now(buffer, System.Logger.Level.WARNING);
            buffer.retireHandled();
        };
        try {
            thread.execute(withdraw);
        } catch (RejectedExecutionException closing) {
            withdraw.run();
        }
    }

    /** Withdraws {@code buffer} from every transport on this thread, logging failures at {@code failureLevel}. */
    void now(StagingBuffer buffer, System.Logger.Level failureLevel) {
        for (TransportServer s : servers) {
            try {
                s.withdraw(buffer);
            } catch (RuntimeException e) {
                LOG.log(failureLevel, "withdrawing " + buffer + " from " + s.location() + " failed: " + e.getMessage());
            }
        }
    }

    /** Finishes the withdrawals queued, up to 30 s. */
    @Override
    public void close() {
        thread.shutdown();
        try {
            if (!thread.awaitTermination(30, TimeUnit.SECONDS)) {
                String late = "producer {0}: withdrawing retired versions did not finish in 30 s";
                LOG.log(System.Logger.Level.WARNING, late, model);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
