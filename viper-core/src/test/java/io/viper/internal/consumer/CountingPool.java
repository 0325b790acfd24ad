package io.viper.internal.consumer;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A fixed pool, as the runtime's hash pool, that counts the tasks handed to it: to tell what ran on the pool and what
 * did not.
 */
final class CountingPool extends ThreadPoolExecutor {
    private final AtomicInteger handed = new AtomicInteger();

    CountingPool(int threads) {
        super(threads, threads, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>());
    }

    @Override
    public void execute(Runnable task) {
        handed.incrementAndGet();
        super.execute(task);
    }

    /** Tasks handed to the pool so far. */
    int handed() {
        return handed.get();
    }
}
