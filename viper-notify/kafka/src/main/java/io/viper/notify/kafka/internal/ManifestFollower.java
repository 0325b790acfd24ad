package io.viper.notify.kafka.internal;

import io.viper.auth.ManifestTrust;
import io.viper.errors.ViperConfigException;
import io.viper.manifest.Manifest;
import io.viper.spi.AnnouncementFeed;
import io.viper.spi.Notifier;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;

/**
 * Follows the manifest topic on one background thread (a Kafka consumer is single-threaded) and feeds the records to an
 * {@link AnnouncementFeed}, which keeps the newest manifest per model and delivers it to subscriptions (its rules:
 * newest only, the same version again when it changed, malformed values skipped). That thread is the feed's, and calls
 * every listener.
 *
 * <p>Reading: no consumer group; all partitions are assigned and read from the beginning, so the compacted latest
 * record of each model arrives; while the records that existed at assignment are read ("catching up") the feed holds
 * what it is given, and delivers the latest of each model once caught up; after that records are delivered as they
 * arrive.
 *
 * <p>Trouble: a record without a valid key, or whose value does not decode, is logged on one line (topic, partition,
 * offset, reason), reported to {@code onProblem} and skipped. A missing topic, an unreachable cluster and a failed
 * consumer are each logged once per change of state and retried with backoff (a failed consumer is replaced and resumes
 * at the offsets already read). The thread only ends when the follower is closed.
 */
final class ManifestFollower implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("io.viper.notify.kafka");
    private static final Duration POLL = Duration.ofMillis(500);
    private static final long PROBE_EVERY_MS = 5_000;
    private static final long MAX_BACKOFF_MS = 5_000;

    private enum State {
        STARTING,
        UNREACHABLE,
        NO_TOPIC,
        FOLLOWING,
        FAILED
    }

    private final KafkaUri uri;
    private final Supplier<Consumer<byte[], byte[]>> consumers;
    private final long apiTimeoutMs;
    /** Work for the follower's thread (subscriptions starting and ending), run between polls. */
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();

    private final AnnouncementFeed feed;
    private final Thread thread;
    private volatile boolean closed;
    private volatile Consumer<byte[], byte[]> current;
    private final Object sleeper = new Object();

    // poll thread only
    private final Map<TopicPartition, Long> nextOffsets = new HashMap<>();
    private State state = State.STARTING;

    /**
     * A follower of {@code uri}'s topic; {@code consumers} makes a new consumer (the first one may be made before the
     * call); {@code apiTimeoutMs} bounds each metadata request.
     */
    ManifestFollower(KafkaUri uri, Supplier<Consumer<byte[], byte[]>> consumers, long apiTimeoutMs) {
        this(uri, consumers, apiTimeoutMs, ManifestTrust.of(Optional.empty(), Manifest.MAX_VERSION));
    }

    /** As above, delivering only the records {@code trust} lets through (signed, not too far ahead). */
    ManifestFollower(
            KafkaUri uri, Supplier<Consumer<byte[], byte[]>> consumers, long apiTimeoutMs, ManifestTrust trust) {
        this.uri = uri;
        this.consumers = consumers;
        this.apiTimeoutMs = apiTimeoutMs;
        this.thread = Thread.ofPlatform()
                .name("viper-kafka-follower-" + uri.topic())
                .daemon(true)
                .unstarted(this::run);
        // Listeners run on this thread too: a Kafka consumer's thread does nothing else meanwhile.
        this.feed = new AnnouncementFeed("Kafka follower of " + uri, LOG, this::onThread, Runnable::run, null, trust);
    }

    void start() {
        thread.start();
    }

    /** Subscribes {@code listener} to {@code model}; it gets the cached latest at once when there is one. */
    Notifier.Subscription subscribe(String model, Notifier.ManifestListener listener) {
        return feed.subscribe(model, listener);
    }

    /**
     * The feed's executor: runs {@code task} at once on the follower's thread, else queues it there and wakes the
     * thread.
     */
    private void onThread(Runnable task) {
        if (Thread.currentThread() == thread) {
            task.run();
            return;
        }
        if (closed) {
            throw new RejectedExecutionException("closed");
        }
        tasks.add(task);
        wake();
    }

    private void runTasks() {
        Runnable task;
        while ((task = tasks.poll()) != null) {
            task.run();
        }
    }

    /** Cuts a backoff sleep or a blocking consumer call short, for a task or for close. */
    private void wake() {
        synchronized (sleeper) {
            sleeper.notifyAll();
        }
        Consumer<byte[], byte[]> c = current;
        if (c != null) {
            c.wakeup();
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        feed.close();
        wake();
        if (Thread.currentThread() != thread && thread.isAlive()) {
            try {
                thread.join(apiTimeoutMs + 5_000);
                if (thread.isAlive()) {
                    thread.interrupt();
                    thread.join(5_000);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void run() {
        long backoff = 100;
        while (!closed) {
            Consumer<byte[], byte[]> c = null;
            try {
                runTasks();
                c = consumers.get();
                current = c;
                if (closed) {
                    break;
                }
                follow(c);
                backoff = 100;
            } catch (WakeupException | InterruptException e) {
                if (!closed) {
                    LOG.log(Level.DEBUG, "Kafka follower of {0} interrupted while open; resuming", uri);
                }
            } catch (RuntimeException e) {
                setState(
                        State.FAILED,
                        "Kafka consumer of " + uri + " failed (" + e.getClass().getSimpleName() + ": " + e.getMessage()
                                + "); retrying with a new consumer, backoff up to " + MAX_BACKOFF_MS + " ms",
                        null);
                sleep(backoff);
                backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
            } finally {
                current = null;
                if (c != null) {
                    try {
                        c.close(CloseOptions.timeout(Duration.ofSeconds(1)));
                    } catch (RuntimeException e) {
                        LOG.log(Level.DEBUG, "closing a Kafka consumer failed: {0}", e.toString());
                    }
                }
            }
        }
        LOG.log(Level.DEBUG, "Kafka follower of {0} stopped", uri);
    }

    /** Follows the topic with {@code c} until closed; throws when the consumer fails. */
    private void follow(Consumer<byte[], byte[]> c) {
        List<TopicPartition> assigned = null;
        Map<TopicPartition, Long> catchUpTo = null;
        long backoff = 100;
        long lastActivity = System.currentTimeMillis();
        while (!closed) {
            try {
                runTasks();
                if (assigned == null) {
                    List<PartitionInfo> parts;
                    try {
                        parts = c.partitionsFor(uri.topic(), Duration.ofMillis(apiTimeoutMs));
                    } catch (TimeoutException e) {
                        setState(
                                State.UNREACHABLE,
                                "Kafka at " + uri.bootstrapServers() + " is unreachable (no metadata within "
                                        + apiTimeoutMs + " ms); retrying with backoff",
                                null);
                        sleep(backoff);
                        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
                        continue;
                    }
                    if (parts == null || parts.isEmpty()) {
                        setState(
                                State.NO_TOPIC,
                                "Kafka topic " + uri.topic() + " does not exist on " + uri.bootstrapServers()
                                        + " yet; waiting for a producer to create it",
                                null);
                        sleep(backoff);
                        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
                        continue;
                    }
                    List<TopicPartition> tps = new ArrayList<>();
                    for (PartitionInfo p : parts) {
                        tps.add(new TopicPartition(p.topic(), p.partition()));
                    }
                    c.assign(tps);
                    List<TopicPartition> fresh = new ArrayList<>();
                    for (TopicPartition tp : tps) {
                        Long next = nextOffsets.get(tp);
                        if (next == null) {
                            fresh.add(tp);
                        } else {
                            c.seek(tp, next);
                        }
                    }
                    c.seekToBeginning(fresh);
                    Map<TopicPartition, Long> ends = c.endOffsets(tps, Duration.ofMillis(apiTimeoutMs));
                    assigned = tps;
                    catchUpTo = new HashMap<>(ends);
                    feed.hold();
                    backoff = 100;
                    lastActivity = System.currentTimeMillis();
                    setState(
                            State.FOLLOWING,
                            "following Kafka topic " + uri.topic() + " on " + uri.bootstrapServers() + " (" + tps.size()
                                    + " partition(s), reading from the start, no consumer group)",
                            null);
                }
                ConsumerRecords<byte[], byte[]> records = c.poll(POLL);
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    nextOffsets.put(new TopicPartition(r.topic(), r.partition()), r.offset() + 1);
                    handle(r);
                }
                if (catchUpTo != null && caughtUp(c, catchUpTo)) {
                    catchUpTo = null;
                    LOG.log(Level.DEBUG, () -> "caught up with Kafka topic " + uri.topic());
                    feed.release();
                }
                long now = System.currentTimeMillis();
                if (!records.isEmpty()) {
                    lastActivity = now;
                    setState(
                            State.FOLLOWING,
                            "Kafka at " + uri.bootstrapServers() + " is reachable again; following topic "
                                    + uri.topic(),
                            null);
                } else if (now - lastActivity >= PROBE_EVERY_MS) {
                    lastActivity = now;
                    if (probe(c, assigned) && partitionsChanged(c, assigned)) {
                        LOG.log(
                                Level.INFO,
                                "Kafka topic " + uri.topic() + " changed its partitions; assigning them again");
                        assigned = null;
                    }
                }
            } catch (WakeupException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    /**
     * Asks the partition leaders for their end offsets, to notice (and log) an unreachable cluster while idle; returns
     * whether they answered.
     */
    private boolean probe(Consumer<byte[], byte[]> c, List<TopicPartition> assigned) {
        try {
            c.endOffsets(assigned, Duration.ofMillis(Math.min(apiTimeoutMs, 3_000)));
            setState(
                    State.FOLLOWING,
                    "Kafka at " + uri.bootstrapServers() + " is reachable again; following topic " + uri.topic(),
                    null);
            return true;
        } catch (TimeoutException e) {
            setState(
                    State.UNREACHABLE,
                    "Kafka at " + uri.bootstrapServers() + " is unreachable; the client keeps retrying,"
                            + " the model held keeps serving",
                    null);
            return false;
        }
    }

    /**
     * Whether the topic's partitions (from the client's metadata, refreshed periodically) differ from those assigned.
     */
    private boolean partitionsChanged(Consumer<byte[], byte[]> c, List<TopicPartition> assigned) {
        try {
            List<PartitionInfo> parts = c.partitionsFor(uri.topic(), Duration.ofMillis(Math.min(apiTimeoutMs, 3_000)));
            return parts != null && !parts.isEmpty() && parts.size() != assigned.size();
        } catch (TimeoutException e) {
            return false;
        }
    }

    private boolean caughtUp(Consumer<byte[], byte[]> c, Map<TopicPartition, Long> ends) {
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            try {
                if (c.position(e.getKey(), Duration.ofMillis(100)) < e.getValue()) {
                    return false;
                }
            } catch (TimeoutException ex) {
                return false;
            }
        }
        return true;
    }

    /** Hands a record's manifest, and the bytes its {@link KafkaNotifier#DATA_HEADER} carried, to the feed. */
    private void handle(ConsumerRecord<byte[], byte[]> r) {
        String where = "Kafka record " + r.topic() + "/" + r.partition() + "@" + r.offset();
        if (r.key() == null) {
            malformed(where, "record has no key (expected the model name)");
            return;
        }
        String model = new String(r.key(), StandardCharsets.UTF_8);
        try {
            Manifest.validateModelName(model);
        } catch (ViperConfigException e) {
            malformed(where, "record key is not a valid model name");
            return;
        }
        if (r.value() == null) {
            LOG.log(
                    Level.INFO,
                    where + " is a tombstone for model " + model + "; ignored, consumers keep the version they hold");
            return;
        }
        Header h = r.headers().lastHeader(KafkaNotifier.DATA_HEADER);
        feed.offer(model, r.value(), h == null ? null : h.value(), where);
    }

    /** A record that names no model: logged and told to every subscription. */
    private void malformed(String where, String reason) {
        String line = "skipping malformed " + where + ": " + reason;
        LOG.log(Level.WARNING, line);
        feed.problemToAll(line);
    }

    private void setState(State next, String message, Throwable cause) {
        if (next == state) {
            return;
        }
        state = next;
        if (next == State.FOLLOWING) {
            LOG.log(Level.INFO, message);
            feed.recovered();
            return;
        }
        if (cause != null) {
            LOG.log(Level.WARNING, message, cause);
        } else {
            LOG.log(Level.WARNING, message);
        }
        feed.trouble(message);
    }

    /** Waits {@code ms}, or less when the follower is closed meanwhile. */
    private void sleep(long ms) {
        long deadline = System.nanoTime() + ms * 1_000_000;
        synchronized (sleeper) {
            try {
                // A spurious wakeup waits again for what is left.
                for (long left = ms; !closed && left > 0; left = (deadline - System.nanoTime()) / 1_000_000) {
                    sleeper.wait(left);
                }
            } catch (InterruptedException e) {
                // only close() interrupts this thread, after setting closed; the loops check it
                Thread.currentThread().interrupt();
            }
        }
    }
}
