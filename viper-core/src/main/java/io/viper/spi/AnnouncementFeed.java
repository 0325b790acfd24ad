package io.viper.spi;

import io.viper.auth.ManifestTrust;
import io.viper.errors.ViperException;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.spi.Notifier.ManifestListener;
import io.viper.spi.Notifier.Subscription;
import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * The subscriber half of the {@link Notifier} contract, written once for every notifier: a notifier feeds it the
 * announcements it receives (an encoded manifest per model, with the version's bytes where they travelled along), and
 * the feed decodes each, checks it belongs to the model it was announced for, keeps the newest per model and delivers
 * it to that model's subscriptions.
 *
 * <p>Delivery rules:
 *
 * <ul>
 *   <li>A subscription gets the newest manifest of its model at once, if the feed holds one, then every newer one in
 *       the order offered. An older version is dropped (a debug line); the same version again is delivered only when it
 *       changed (a republication with more locations).
 *   <li>An announcement that does not decode, is not signed with the deployment's key, is numbered too far ahead
 *       ({@link ManifestTrust}), or names another model, is logged on one line (WARNING), told to the model's
 *       subscriptions through {@code onProblem} and skipped. Bytes whose length is not the manifest's
 *       {@code totalBytes()} are not the version's: the manifest is delivered without them (consumers fetch the
 *       version), and that is logged and told likewise.
 *   <li>A listener that throws is logged; the subscription goes on. A closed subscription gets nothing more, and
 *       nothing reaches a listener once the feed is closed.
 *   <li>{@link #trouble}, remembered until {@link #recovered}, and {@link #failed}, remembered for good, are told to
 *       every subscription, and to each later one when it starts.
 * </ul>
 *
 * <p>What the feed keeps depends on its source. A source that sends every model (a Kafka topic read from the start)
 * keeps the newest of each, for subscriptions to come. A source that sends only the models someone follows (a broker
 * told SUBSCRIBE and UNSUBSCRIBE) is given a {@link Demand}: the feed tells it when a model gains its first
 * subscription and loses its last, and forgets that model then.
 *
 * <p>Threads. One thread, the feed's (the notifier's I/O loop or polling thread, reached through the {@code feedThread}
 * executor given to the constructor), owns the feed's state: {@link #offer}, {@link #hold}, {@link #release},
 * {@link #problem}, {@link #problemToAll}, {@link #trouble}, {@link #recovered}, {@link #failed} and {@link #models}
 * are called on it only, and so are the {@link Demand}'s methods. {@link #subscribe}, {@link Subscription#close()} and
 * {@link #close()} may be called from any thread: they hand their work to the feed's thread.
 * {@linkplain ManifestListener#quick() Quick} listeners get manifests on the feed's thread, as they are offered (one
 * hand-off less before a consumer fetches); other listeners get them, and every listener its problems and failures,
 * through the {@code dispatcher}, which must run tasks one at a time in the order given (a single thread, or the feed's
 * thread itself where listeners may run there). The feed holds no buffer of the caller's: the arrays offered to it are
 * kept, never written, and handed to listeners as read-only segments.
 */
public final class AnnouncementFeed {
    /**
     * The source of a feed that sends only the models someone follows. Called on the feed's thread: the notifier starts
     * or stops receiving the model (and, on starting, the source sends its newest).
     */
    public interface Demand {
        /** {@code model} has its first subscription: start receiving it. */
        void follow(String model);

        /** {@code model}'s last subscription closed: stop receiving it. */
        void unfollow(String model);
    }

    private final String name;
    private final Logger log;
    private final Executor feedThread;
    private final Executor dispatcher;
    private final Demand demand;
    private final ManifestTrust trust;

    // Confined to the feed's thread.
    private final Map<String, Model> models = new HashMap<>();
    private boolean holding;
    private String trouble;
    private ViperException failure;

    private volatile boolean closed;

    /** The newest manifest of one model, with its bytes or null, and its subscriptions. */
    private static final class Model {
        final List<Sub> subs = new ArrayList<>();
        Manifest latest;
        byte[] data;
    }

    /**
     * A feed whose source sends every model: it keeps the newest of each. {@code name} starts the lines it logs to
     * {@code log}; the executors are described on the class.
     */
    public AnnouncementFeed(String name, Logger log, Executor feedThread, Executor dispatcher) {
        this(name, log, feedThread, dispatcher, null);
    }

    /** A feed whose source sends only the models {@code demand} was told to follow; as above otherwise. */
    public AnnouncementFeed(String name, Logger log, Executor feedThread, Executor dispatcher, Demand demand) {
        this(name, log, feedThread, dispatcher, demand, ManifestTrust.of(Optional.empty(), Manifest.MAX_VERSION));
    }

    /**
     * A feed that delivers only what {@code trust} lets through: manifests signed with the deployment's key, numbered
     * no further ahead than its limit (others are skipped as malformed ones are); {@code demand} may be null (a source
     * that sends every model). A notifier that carries manifests from the network uses this one; the others check
     * nothing, for sources inside one process.
     */
    public AnnouncementFeed(
            String name, Logger log, Executor feedThread, Executor dispatcher, Demand demand, ManifestTrust trust) {
        this.name = Objects.requireNonNull(name, "name");
        this.log = Objects.requireNonNull(log, "log");
        this.feedThread = Objects.requireNonNull(feedThread, "feedThread");
        this.dispatcher = Objects.requireNonNull(dispatcher, "dispatcher");
        this.demand = demand;
        this.trust = Objects.requireNonNull(trust, "trust");
    }

    /**
     * Subscribes {@code listener} to {@code model} (both already checked by the notifier). Any thread; the subscription
     * starts on the feed's thread, where it gets the newest manifest held, if any.
     */
    public Subscription subscribe(String model, ManifestListener listener) {
        Sub sub = new Sub(Objects.requireNonNull(model, "model"), Objects.requireNonNull(listener, "listener"));
        onFeedThread(() -> start(sub));
        return sub;
    }

    /**
     * Offers an announcement of {@code model}: {@code encoded} is the manifest as it arrived, {@code data} the
     * version's bytes that came with it (null or empty: none). {@code where} names its origin in log lines and problems
     * ("Kafka record t/0@5"). Feed's thread only.
     */
    public void offer(String model, byte[] encoded, byte[] data, String where) {
        if (demand != null && !models.containsKey(model)) {
            return; // Nobody follows it any more: the source was told, this one was on its way.
        }
        Manifest m;
        try {
            m = ManifestCodec.decode(trust.open(encoded, where), where);
            Model known = models.get(m.model());
            trust.checkVersion(
                    m.model(), known == null || known.latest == null ? 0 : known.latest.version(), m.version(), where);
        } catch (ViperException e) {
            skip(model, e.getMessage());
            return;
        } catch (RuntimeException e) {
            skip(model, where + ": manifest does not decode: " + e);
            return;
        }
        if (!m.model().equals(model)) {
            skip(
                    model,
                    where + ": announced as '" + model + "', which does not match the manifest's model '" + m.model()
                            + "'");
            return;
        }
        byte[] bytes = data == null || data.length == 0 ? null : data;
        if (bytes != null && bytes.length != m.totalBytes()) {
            String line = name + ": " + where + ": " + model + " v" + m.version() + " came with " + bytes.length
                    + " bytes for a version of " + m.totalBytes() + "; delivered without them, consumers fetch it";
            log.log(Level.WARNING, line);
            problem(model, line);
            bytes = null;
        }
        accept(model, m, bytes);
    }

    private void accept(String model, Manifest m, byte[] data) {
        Model state = models.computeIfAbsent(model, k -> new Model());
        Manifest held = state.latest;
        if (held != null && m.version() < held.version()) {
            log.log(
                    Level.DEBUG,
                    () -> name + ": ignoring " + model + " v" + m.version() + ": v" + held.version()
                            + " is already known");
            return;
        }
        if (m.equals(held)) {
            return; // The same as what the subscriptions have (a replay after reconnecting, say).
        }
        state.latest = m;
        state.data = data;
        if (!holding) {
            for (Sub s : state.subs) {
                s.offer(m, data);
            }
        }
    }

    private void skip(String model, String problem) {
        String line = name + ": skipped " + problem;
        log.log(Level.WARNING, line);
        problem(model, line);
    }

    /**
     * Keeps what is offered from now on without delivering it, while the source replays history (a Kafka topic read
     * from the start): subscriptions get only the newest, at {@link #release()}. Feed's thread only.
     */
    public void hold() {
        holding = true;
    }

    /**
     * Ends {@link #hold()}: each subscription gets its model's newest manifest unless it has it. Feed's thread only.
     */
    public void release() {
        holding = false;
        for (Model state : models.values()) {
            if (state.latest != null) {
                for (Sub s : state.subs) {
                    s.offer(state.latest, state.data);
                }
            }
        }
    }

    /** Tells {@code model}'s subscriptions of {@code problem} (through {@code onProblem}). Feed's thread only. */
    public void problem(String model, String problem) {
        Model state = models.get(model);
        if (state != null) {
            for (Sub s : state.subs) {
                s.problem(problem);
            }
        }
    }

    /** Tells every subscription of {@code problem}. Feed's thread only. */
    public void problemToAll(String problem) {
        for (Model state : models.values()) {
            for (Sub s : state.subs) {
                s.problem(problem);
            }
        }
    }

    /**
     * The source is in trouble (unreachable, retrying): tells every subscription, and each one that starts before
     * {@link #recovered()}. Feed's thread only.
     */
    public void trouble(String problem) {
        trouble = Objects.requireNonNull(problem, "problem");
        problemToAll(problem);
    }

    /** The trouble is over: subscriptions that start from now on are not told of it. Feed's thread only. */
    public void recovered() {
        trouble = null;
    }

    /**
     * The source is gone for a reason trying again cannot fix: tells every subscription through {@code onFailure}, and
     * each that starts later. Feed's thread only.
     */
    public void failed(ViperException reason) {
        failure = Objects.requireNonNull(reason, "reason");
        for (Model state : models.values()) {
            for (Sub s : state.subs) {
                s.failure(reason);
            }
        }
    }

    /**
     * The models that have a subscription (for a notifier that subscribes again after reconnecting). Feed's thread
     * only.
     */
    public List<String> models() {
        List<String> followed = new ArrayList<>();
        for (Map.Entry<String, Model> e : models.entrySet()) {
            if (!e.getValue().subs.isEmpty()) {
                followed.add(e.getKey());
            }
        }
        return followed;
    }

    /** Stops delivering: nothing reaches a listener any more, calls still queued included. Any thread; idempotent. */
    public void close() {
        closed = true;
    }

    private void start(Sub sub) {
        if (sub.closed || closed) {
            return;
        }
        Model state = models.computeIfAbsent(sub.model, k -> new Model());
        state.subs.add(sub);
        if (state.subs.size() == 1 && demand != null) {
            demand.follow(sub.model);
        }
        if (state.latest != null && !holding) {
            sub.offer(state.latest, state.data);
        }
        if (failure != null) {
            sub.failure(failure);
        } else if (trouble != null) {
            sub.problem(trouble);
        }
    }

    private void stop(Sub sub) {
        Model state = models.get(sub.model);
        if (state != null && state.subs.remove(sub) && state.subs.isEmpty() && demand != null) {
            models.remove(sub.model);
            demand.unfollow(sub.model);
        }
    }

    private void onFeedThread(Runnable task) {
        try {
            feedThread.execute(task);
        } catch (RejectedExecutionException e) {
            // The notifier is closing: nothing starts or stops any more.
        }
    }

    private void dispatch(Runnable call) {
        try {
            dispatcher.execute(call);
        } catch (RejectedExecutionException e) {
            // The notifier is closing: nothing is delivered any more.
        }
    }

    /** One subscription; {@code last} is the newest manifest it was given. */
    private final class Sub implements Subscription {
        final String model;
        final ManifestListener listener;
        final boolean quick;
        volatile boolean closed;
        Manifest last; // feed's thread only

        Sub(String model, ManifestListener listener) {
            this.model = model;
            this.listener = listener;
            this.quick = listener.quick();
        }

        /** Delivers {@code m} unless it is older than, or the same as, the last one this subscription got. */
        void offer(Manifest m, byte[] data) {
            if (last != null && (m.version() < last.version() || m.equals(last))) {
                return;
            }
            last = m;
            if (quick) {
                deliver(m, data); // on the feed's thread: one hand-off less before the consumer fetches
            } else {
                dispatch(() -> deliver(m, data));
            }
        }

        private void deliver(Manifest m, byte[] data) {
            if (ended()) {
                return;
            }
            try {
                if (data == null) {
                    listener.onManifest(m);
                } else {
                    listener.onManifest(m, MemorySegment.ofArray(data).asReadOnly());
                }
            } catch (RuntimeException e) {
                log.log(
                        Level.WARNING,
                        name + ": listener of " + model + " failed on v" + m.version() + "; the subscription goes on: "
                                + e,
                        e);
            }
        }

        void problem(String problem) {
            dispatch(() -> tell("onProblem", () -> listener.onProblem(problem)));
        }

        void failure(ViperException reason) {
            dispatch(() -> tell("onFailure", () -> listener.onFailure(reason)));
        }

        private void tell(String method, Runnable call) {
            if (ended()) {
                return;
            }
            try {
                call.run();
            } catch (RuntimeException e) {
                log.log(Level.WARNING, name + ": listener of " + model + " failed in " + method + ": " + e, e);
            }
        }

        private boolean ended() {
            return closed || AnnouncementFeed.this.closed;
        }

        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            onFeedThread(() -> stop(this));
        }
    }
}
