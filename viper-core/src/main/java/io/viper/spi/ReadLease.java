package io.viper.spi;

/**
 * A reader's claim on a staged checkpoint: while any lease is open the producer does not recycle the buffer.
 * {@link #close()} is idempotent and may be called from any thread.
 */
public interface ReadLease extends AutoCloseable {
    @Override
    void close();
}
