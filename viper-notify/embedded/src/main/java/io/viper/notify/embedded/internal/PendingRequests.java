package io.viper.notify.embedded.internal;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.Supplier;

/**
 * The requests (PUBLISH, LATEST) an {@link EmbeddedNotifier} sent that wait for the broker's ACK or ERROR, by request
 * id. Thread-safe: a caller sends and waits on its own thread, the event loop completes answers and fails what a lost
 * connection will never answer.
 */
final class PendingRequests {
    private final String name;
    private final long timeoutMs;
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, CompletableFuture<NotifyMessage>> waiting = new ConcurrentHashMap<>();

    /**
     * Requests of the notifier {@code name}, each waiting {@code timeoutMs} ({@code viper.notify.timeout.ms}) at most.
     */
    PendingRequests(String name, long timeoutMs) {
        this.name = name;
        this.timeoutMs = timeoutMs;
    }

    /**
     * Sends the frame {@code request} builds for a new request id over {@code ch} and waits for the ACK (or ERROR)
     * naming that id.
     */
    NotifyMessage send(Channel ch, BiFunction<Channel, Long, ByteBuf> request, String what) {
        long id = ids.incrementAndGet();
        CompletableFuture<NotifyMessage> answer = new CompletableFuture<>();
        waiting.put(id, answer);
        ch.writeAndFlush(request.apply(ch, id)).addListener((ChannelFutureListener) f -> {
            if (!f.isSuccess()) {
                CompletableFuture<NotifyMessage> p = waiting.remove(id);
                if (p != null) {
                    p.completeExceptionally(new RetriableViperException(
                            ViperException.Reason.UNAVAILABLE,
                            name + ": sending the " + what + " to the broker failed: " + BrokerLink.describe(f.cause()),
                            f.cause()));
                }
            }
        });
        // The channel may have gone inactive before the request was registered; its failure is then reported by the
        // write.
        try {
            return await(answer, what);
        } finally {
            waiting.remove(id);
        }
    }

    /** Waits for the broker's answer to a request ({@code viper.notify.timeout.ms} at most). */
    NotifyMessage await(CompletableFuture<NotifyMessage> answer, String what) {
        try {
            return answer.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof ViperException ve) {
                throw ve;
            }
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE,
                    name + ": " + what + " failed: " + BrokerLink.describe(e.getCause()),
                    e.getCause());
        } catch (TimeoutException e) {
            throw new ViperTimeoutException(
                    name + ": the broker did not answer the " + what + " within " + timeoutMs + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE, name + ": interrupted during the " + what);
        }
    }

    /** Completes the request {@code requestId} with {@code answer}; false when none waits for it. */
    boolean answer(long requestId, NotifyMessage answer) {
        CompletableFuture<NotifyMessage> p = requestId == 0 ? null : waiting.remove(requestId);
        if (p == null) {
            return false;
        }
        p.complete(answer);
        return true;
    }

    /** Fails every request waiting now with a {@code failure} (a lost connection, a closed notifier). */
    void failAll(Supplier<ViperException> failure) {
        for (Long id : List.copyOf(waiting.keySet())) {
            CompletableFuture<NotifyMessage> f = waiting.remove(id);
            if (f != null) {
                f.completeExceptionally(failure.get());
            }
        }
    }
}
