package io.viper.transfer.ucx.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import java.lang.System.Logger.Level;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;

/**
 * One UCP context, one worker on it, and the single thread that drives them. Every UCX call of the context and worker
 * (progress, endpoints, memory registration, RMA) is made on that thread: other threads hand it work with
 * {@link #execute} or {@link #call}, which queue the task and {@link UcpWorker#signal() signal} the worker.
 *
 * <p>The thread loops {@code progress()}; when nothing progressed and no task is queued it blocks in
 * {@code waitForEvents()}, unless {@link #busyBegin() busy} (requests in flight), when it busy-polls.
 * {@link #close(Runnable, long)} runs a last cleanup task on the thread (close endpoints, deregister memory), then
 * closes the worker and after it the context.
 */
public final class WorkerLoop implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(WorkerLoop.class.getName());

    private final String name;
    private final UcpContext context;
    private final UcpWorker worker;
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final Object lock = new Object();
    private final Thread thread;
    private final CompletableFuture<Void> terminated = new CompletableFuture<>();
    /** Guarded by {@link #lock}: once true no task is accepted and the worker may be gone. */
    private boolean closing;
    /** Loop thread only. */
    private boolean stopRequested;
    /** Loop thread only: while positive the loop busy-polls instead of waiting for events. */
    private int busy;

    /** Creates the context and worker and starts the progress thread named {@code name}. */
    public WorkerLoop(String name) {
        this(name, UcxNative.contextParams());
    }

    /** As {@link #WorkerLoop(String)}, with the context made from {@code params}. */
    public WorkerLoop(String name, UcpParams params) {
        this.name = name;
        UcpContext ctx = new UcpContext(params);
        UcpWorker w;
        try {
            w = ctx.newWorker(new UcpWorkerParams());
        } catch (RuntimeException e) {
            ctx.close();
            throw e;
        }
        this.context = ctx;
        this.worker = w;
        this.thread = Thread.ofPlatform().daemon().name(name).unstarted(this::run);
        thread.start();
    }

    /** The context; use on the loop thread only. */
    public UcpContext context() {
        assertInLoop();
        return context;
    }

    /** The worker; use on the loop thread only. */
    public UcpWorker worker() {
        assertInLoop();
        return worker;
    }

    public boolean inLoop() {
        return Thread.currentThread() == thread;
    }

    private void assertInLoop() {
        if (!inLoop()) {
            throw new IllegalStateException("UCX worker " + name + " used off its progress thread");
        }
    }

    /** Loop thread only: requests are in flight, poll without sleeping until {@link #busyEnd()}. */
    public void busyBegin() {
        assertInLoop();
        busy++;
    }

    /** Loop thread only: undoes one {@link #busyBegin()}. */
    public void busyEnd() {
        assertInLoop();
        busy--;
    }

    /**
     * Queues {@code task} for the loop thread and wakes it. Throws a {@link ViperClosedException} once the loop is
     * closing. Callable from any thread.
     */
    public void execute(Runnable task) {
        synchronized (lock) {
            if (closing) {
                throw new ViperClosedException("UCX worker " + name + " is closed");
            }
            tasks.add(task);
            worker.signal();
        }
    }

    /** Runs {@code task} on the loop thread and returns its future; never throws for a closed loop. */
    public <T> CompletableFuture<T> submit(Callable<T> task) {
        CompletableFuture<T> f = new CompletableFuture<>();
        try {
            execute(() -> {
                try {
                    f.complete(task.call());
                } catch (Throwable e) {
                    f.completeExceptionally(e);
                }
            });
        } catch (RuntimeException e) {
            f.completeExceptionally(e);
        }
        return f;
    }

    /**
     * Runs {@code task} on the loop thread and waits up to {@code timeoutMs} for its result; runs it directly when
     * called on the loop thread. Exceptions of the task are rethrown as they are when unchecked.
     */
    public <T> T call(Callable<T> task, long timeoutMs) {
        if (inLoop()) {
            try {
                return task.call();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new ViperException(
                        ViperException.Reason.INTERNAL, "UCX worker " + name + ": " + e.getMessage(), e);
            }
        }
        CompletableFuture<T> f = submit(task);
        try {
            return f.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException re) {
                throw re;
            }
            if (c instanceof Error err) {
                throw err;
            }
            throw new ViperException(ViperException.Reason.INTERNAL, "UCX worker " + name + ": " + c, c);
        } catch (TimeoutException e) {
            throw new ViperTimeoutException("UCX worker " + name + " did not answer within " + timeoutMs + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER, "interrupted while waiting for UCX worker " + name);
        }
    }

    /**
     * Loop thread only: progresses the worker until {@code done} holds or {@code timeoutMs} passed; returns whether it
     * holds. Tasks queued meanwhile wait. For shutdown paths (endpoint close).
     */
    public boolean progressUntil(BooleanSupplier done, long timeoutMs) {
        assertInLoop();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            try {
                if (worker.progress() == 0) {
                    Thread.onSpinWait();
                }
            } catch (Exception e) {
                LOG.log(Level.WARNING, "UCX worker " + name + ": progress failed: " + e.getMessage(), e);
                return done.getAsBoolean();
            }
        }
        return true;
    }

    /**
     * Stops the loop: runs {@code cleanup} on the loop thread after every task queued before, then closes the worker
     * and the context. Waits up to {@code timeoutMs}. Idempotent; callable from any thread but the loop thread.
     */
    public void close(Runnable cleanup, long timeoutMs) {
        synchronized (lock) {
            if (!closing) {
                tasks.add(() -> {
                    try {
                        cleanup.run();
                    } finally {
                        stopRequested = true;
                    }
                });
                closing = true;
                worker.signal();
            }
        }
        if (inLoop()) {
            return;
        }
        try {
            terminated.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            LOG.log(Level.WARNING, "UCX worker " + name + " did not stop within " + timeoutMs + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            LOG.log(Level.WARNING, "UCX worker " + name + " stopped with an error", e.getCause());
        }
    }

    /** {@link #close(Runnable, long)} with no cleanup task, waiting up to 30 s. */
    @Override
    public void close() {
        close(() -> {}, 30_000);
    }

    private void run() {
        try {
            while (true) {
                Runnable task;
                while ((task = tasks.poll()) != null) {
                    runTask(task);
                }
                if (stopRequested) {
                    break;
                }
                int progressed;
                try {
                    progressed = worker.progress();
                } catch (Exception e) {
                    LOG.log(Level.WARNING, "UCX worker " + name + ": progress failed: " + e.getMessage(), e);
                    progressed = 0;
                    Thread.sleep(1);
                }
                if (progressed == 0 && tasks.isEmpty()) {
                    if (busy > 0) {
                        Thread.onSpinWait();
                    } else {
                        worker.waitForEvents();
                    }
                }
            }
        } catch (Throwable e) {
            LOG.log(Level.ERROR, "UCX worker " + name + ": progress thread failed", e);
            synchronized (lock) {
                closing = true;
            }
        } finally {
            // Tasks that raced with close: run them so that their futures complete (they see a closing loop).
            Runnable task;
            while ((task = tasks.poll()) != null) {
                runTask(task);
            }
            try {
                worker.close();
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "UCX worker " + name + ": closing the worker failed", e);
            }
            try {
                context.close();
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "UCX worker " + name + ": closing the context failed", e);
            }
            terminated.complete(null);
        }
    }

    private void runTask(Runnable task) {
        try {
            task.run();
        } catch (Throwable e) {
            LOG.log(Level.WARNING, "UCX worker " + name + ": task failed", e);
        }
    }
}
